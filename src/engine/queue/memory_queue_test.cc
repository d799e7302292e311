// MemoryQueue: order, the three limits, the oversized message an empty queue always takes, and
// Close() waking both sides.
#include "engine/queue/memory_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "testing/in_memory_connectors.h"

namespace bizon {
namespace {

using namespace std::chrono_literals;
using testing_support::MakeRecords;

QueueMessage Message(int64_t iteration, int records) {
  QueueMessage message;
  message.iteration = iteration;
  message.records = MakeRecords(records);
  return message;
}

// Pushes `message` on a thread and reports when the push returned, and with what.
class BlockedPush {
 public:
  BlockedPush(MemoryQueue& queue, QueueMessage message)
      : thread_([this, &queue, m = std::move(message)]() mutable {
          accepted_ = queue.Push(std::move(m)).ok();
          done_ = true;
        }) {}
  ~BlockedPush() {
    if (thread_.joinable()) thread_.join();
  }
  bool done() const { return done_; }
  bool Wait() {
    thread_.join();
    return accepted_;
  }

 private:
  std::atomic<bool> done_{false};
  bool accepted_ = false;
  std::thread thread_;
};

TEST(MemoryQueueTest, PopsInPushOrder) {
  MemoryQueue queue(QueueLimits{});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(queue.Push(Message(i, 2)).ok());
  for (int i = 0; i < 3; ++i) {
    auto message = queue.Pop(10ms);
    ASSERT_TRUE(message.has_value());
    EXPECT_EQ(message->iteration, i);
    EXPECT_EQ(message->records.size(), 2u);
  }
  EXPECT_EQ(queue.full_waits(), 0);
}

TEST(MemoryQueueTest, PopTimesOutOnAnEmptyQueue) {
  MemoryQueue queue(QueueLimits{});
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(queue.Pop(50ms).has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 45ms);
}

TEST(MemoryQueueTest, AFullQueueByIterationsBlocksThePushUntilAPop) {
  MemoryQueue queue(QueueLimits{.max_records = 0, .max_bytes = 0, .max_iterations = 2});
  ASSERT_TRUE(queue.Push(Message(0, 1)).ok());
  ASSERT_TRUE(queue.Push(Message(1, 1)).ok());
  BlockedPush third(queue, Message(2, 1));
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(third.done());
  ASSERT_EQ(queue.Pop(10ms)->iteration, 0);
  EXPECT_TRUE(third.Wait());
  EXPECT_EQ(queue.full_waits(), 1);
  EXPECT_EQ(queue.Pop(10ms)->iteration, 1);
  EXPECT_EQ(queue.Pop(10ms)->iteration, 2);
}

TEST(MemoryQueueTest, TheRecordLimitCountsRecordsNotMessages) {
  MemoryQueue queue(QueueLimits{.max_records = 5, .max_bytes = 0, .max_iterations = 0});
  ASSERT_TRUE(queue.Push(Message(0, 3)).ok());
  BlockedPush second(queue, Message(1, 3));  // 3 + 3 > 5.
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(second.done());
  ASSERT_TRUE(queue.Pop(10ms).has_value());
  EXPECT_TRUE(second.Wait());
}

TEST(MemoryQueueTest, TheByteLimitCountsMessageSizes) {
  QueueMessage first = Message(0, 4);
  int64_t limit = static_cast<int64_t>(first.ByteSize()) + 10;
  MemoryQueue queue(QueueLimits{.max_records = 0, .max_bytes = limit, .max_iterations = 0});
  ASSERT_TRUE(queue.Push(std::move(first)).ok());
  BlockedPush second(queue, Message(1, 4));
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(second.done());
  ASSERT_TRUE(queue.Pop(10ms).has_value());
  EXPECT_TRUE(second.Wait());
}

TEST(MemoryQueueTest, AnEmptyQueueTakesAMessageLargerThanEveryLimit) {
  MemoryQueue queue(QueueLimits{.max_records = 2, .max_bytes = 10, .max_iterations = 1});
  ASSERT_TRUE(queue.Push(Message(0, 50)).ok());
  EXPECT_EQ(queue.full_waits(), 0);
  EXPECT_EQ(queue.Pop(10ms)->records.size(), 50u);
}

TEST(MemoryQueueTest, CloseWakesABlockedPushAndRefusesLaterOnes) {
  MemoryQueue queue(QueueLimits{.max_records = 0, .max_bytes = 0, .max_iterations = 1});
  ASSERT_TRUE(queue.Push(Message(0, 1)).ok());
  BlockedPush blocked(queue, Message(1, 1));
  std::this_thread::sleep_for(30ms);
  queue.Close();
  EXPECT_FALSE(blocked.Wait());
  EXPECT_TRUE(queue.closed());
  EXPECT_FALSE(queue.Push(Message(2, 1)).ok());
  // What was queued before Close() is still handed out, then pops return at once.
  EXPECT_EQ(queue.Pop(10ms)->iteration, 0);
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(queue.Pop(5s).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST(MemoryQueueTest, CloseWakesAWaitingPop) {
  MemoryQueue queue(QueueLimits{});
  std::thread closer([&] {
    std::this_thread::sleep_for(30ms);
    queue.Close();
  });
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(queue.Pop(5s).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  closer.join();
}

}  // namespace
}  // namespace bizon
