#include "alerting/alert_buffer.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

constexpr int64_t kSecond = 1'000'000;

AlertRecord Error(std::string message) {
  return {.level = AlertLevel::kError, .message = std::move(message)};
}

TEST(AlertBufferTest, GathersRecordsIntoOneBatchAfterTheGatherDelay) {
  AlertBuffer buffer({.gather_s = 1});
  ASSERT_TRUE(buffer.Push(Error("transform failed"), 0));
  ASSERT_TRUE(buffer.Push(Error("Pipeline finished with status Failure"), kSecond / 10));
  EXPECT_FALSE(buffer.TakeDue(kSecond / 2, false));  // Still gathering.
  EXPECT_EQ(buffer.NextDueUs(), kSecond);
  auto batch = buffer.TakeDue(kSecond, false);
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->size(), 2u);
  EXPECT_EQ((*batch)[0].record.message, "transform failed");
  EXPECT_EQ((*batch)[1].record.message, "Pipeline finished with status Failure");
  EXPECT_TRUE(buffer.empty());
}

TEST(AlertBufferTest, FlushingMakesEverythingDueAtOnce) {
  AlertBuffer buffer({.gather_s = 10});
  buffer.Push(Error("fatal"), 0);
  EXPECT_FALSE(buffer.TakeDue(1, false));
  auto batch = buffer.TakeDue(1, true);
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->size(), 1u);
}

TEST(AlertBufferTest, IdenticalRecordsCollapseWithACount) {
  AlertBuffer buffer({.gather_s = 1});
  for (int i = 0; i < 50; ++i) buffer.Push(Error("same"), i);
  buffer.Push(Error("other"), 60);
  EXPECT_EQ(buffer.size(), 2u);
  auto batch = buffer.TakeDue(kSecond + 60, false);
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->size(), 2u);
  EXPECT_EQ((*batch)[0].count, 50);
  EXPECT_FALSE((*batch)[0].repeated);
  EXPECT_EQ((*batch)[1].count, 1);
}

TEST(AlertBufferTest, SameTextAtAnotherLevelOrPlaceIsAnotherAlert) {
  AlertBuffer buffer;
  buffer.Push(Error("x"), 0);
  buffer.Push({.level = AlertLevel::kCritical, .message = "x"}, 0);
  buffer.Push({.level = AlertLevel::kError, .message = "x", .file = "a.cc", .line = 3}, 0);
  EXPECT_EQ(buffer.size(), 3u);
}

TEST(AlertBufferTest, RepeatsWithinTheWindowAreHeldAndPostedOnceWithTheirCount) {
  AlertBuffer buffer({.gather_s = 0, .dedup_window_s = 60});
  buffer.Push(Error("disk full"), 0);
  ASSERT_TRUE(buffer.TakeDue(0, false));
  // Posted at 0: the next 30 identical records within 60 s are held as one repeat.
  for (int i = 1; i <= 30; ++i) buffer.Push(Error("disk full"), i * kSecond);
  EXPECT_EQ(buffer.size(), 1u);
  EXPECT_FALSE(buffer.TakeDue(59 * kSecond, false));
  EXPECT_EQ(buffer.NextDueUs(), 60 * kSecond);
  auto batch = buffer.TakeDue(60 * kSecond, false);
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->size(), 1u);
  EXPECT_TRUE((*batch)[0].repeated);
  EXPECT_EQ((*batch)[0].count, 30);
  EXPECT_TRUE(buffer.empty());
  // That post opened a new window.
  buffer.Push(Error("disk full"), 61 * kSecond);
  EXPECT_FALSE(buffer.TakeDue(61 * kSecond, false));
}

TEST(AlertBufferTest, HeldRepeatsAreNotLostAtExit) {
  AlertBuffer buffer({.gather_s = 0, .dedup_window_s = 60});
  buffer.Push(Error("boom"), 0);
  ASSERT_TRUE(buffer.TakeDue(0, false));
  buffer.Push(Error("boom"), kSecond);
  buffer.Push(Error("boom"), 2 * kSecond);
  auto batch = buffer.TakeDue(3 * kSecond, /*flushing=*/true);
  ASSERT_TRUE(batch);
  EXPECT_EQ((*batch)[0].count, 2);
  EXPECT_TRUE((*batch)[0].repeated);
}

TEST(AlertBufferTest, OutsideTheWindowTheSameAlertIsPostedAgain) {
  AlertBuffer buffer({.gather_s = 0, .dedup_window_s = 60});
  buffer.Push(Error("again"), 0);
  ASSERT_TRUE(buffer.TakeDue(0, false));
  buffer.Push(Error("again"), 61 * kSecond);
  auto batch = buffer.TakeDue(61 * kSecond, false);
  ASSERT_TRUE(batch);
  EXPECT_FALSE((*batch)[0].repeated);
  EXPECT_EQ((*batch)[0].count, 1);
}

TEST(AlertBufferTest, BoundedDropsAndCountsDistinctRecordsPastCapacity) {
  AlertBuffer buffer({.capacity = 3});
  for (int i = 0; i < 10; ++i) buffer.Push(Error("alert " + std::to_string(i)), 0);
  EXPECT_EQ(buffer.size(), 3u);
  // An identical record is folded in, never dropped.
  EXPECT_TRUE(buffer.Push(Error("alert 0"), 0));
  EXPECT_EQ(buffer.TakeDropped(), 7);
  EXPECT_EQ(buffer.TakeDropped(), 0);
}

TEST(AlertBufferTest, BatchesAreCappedAndAFailedBatchGoesBackFirst) {
  AlertBuffer buffer({.gather_s = 0, .batch_max = 2});
  for (int i = 0; i < 5; ++i) buffer.Push(Error(std::to_string(i)), 0);
  auto first = buffer.TakeDue(0, false);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->size(), 2u);
  buffer.Return(std::move(*first));
  auto again = buffer.TakeDue(0, false);
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)[0].record.message, "0");
  EXPECT_EQ(buffer.size(), 3u);
}

TEST(TokenBucketTest, AllowsABurstThenOnePerSecond) {
  TokenBucket bucket(/*per_second=*/1, /*burst=*/3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(bucket.WaitSeconds(0), 0) << i;
    bucket.Take(0);
  }
  EXPECT_DOUBLE_EQ(bucket.WaitSeconds(0), 1);
  EXPECT_DOUBLE_EQ(bucket.WaitSeconds(kSecond / 4), 0.75);
  EXPECT_EQ(bucket.WaitSeconds(kSecond), 0);
  bucket.Take(kSecond);
  EXPECT_GT(bucket.WaitSeconds(kSecond), 0);
  // Idle time refills up to the burst, no further.
  EXPECT_EQ(bucket.WaitSeconds(100 * kSecond), 0);
  for (int i = 0; i < 3; ++i) bucket.Take(100 * kSecond);
  EXPECT_GT(bucket.WaitSeconds(100 * kSecond), 0);
}

TEST(TokenBucketTest, PauseUntilHoldsEveryPost) {
  TokenBucket bucket(1, 3);
  bucket.PauseUntil(30 * kSecond);
  EXPECT_DOUBLE_EQ(bucket.WaitSeconds(10 * kSecond), 20);
  EXPECT_EQ(bucket.WaitSeconds(30 * kSecond), 0);
}

}  // namespace
}  // namespace bizon
