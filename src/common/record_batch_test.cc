#include "bizon/record_batch.h"

#include <gtest/gtest.h>

#include <string>

namespace bizon {
namespace {

RecordBatch Numbered(int first, int count, std::string_view destination_id = {}) {
  RecordBatch batch;
  for (int i = first; i < first + count; ++i) {
    batch.Add("id" + std::to_string(i), "{\"n\":" + std::to_string(i) + "}", 1000 + i,
              destination_id);
  }
  batch.SetExtractedAt(7);
  return batch;
}

TEST(RecordBatchTest, AppendRangeCopiesARangeWithItsOffsetsShifted) {
  RecordBatch target = Numbered(0, 2);
  RecordBatch other = Numbered(10, 5);
  target.AppendRange(other, 1, 4);
  ASSERT_EQ(target.size(), 5u);
  for (size_t i = 0; i < target.size(); ++i) {
    int n = i < 2 ? static_cast<int>(i) : static_cast<int>(i) + 9;
    EXPECT_EQ(target.id(i), "id" + std::to_string(n));
    EXPECT_EQ(target.payload(i), "{\"n\":" + std::to_string(n) + "}");
    EXPECT_EQ(target.timestamp_us(i), 1000 + n);
    EXPECT_EQ(target.extracted_at_us(i), 7);
    EXPECT_EQ(target.destination_id(i), "");
  }
  EXPECT_FALSE(target.has_destination_ids());
  target.AppendRange(other, 3, 3);  // An empty range changes nothing.
  EXPECT_EQ(target.size(), 5u);
}

TEST(RecordBatchTest, AppendRangeKeepsDestinationIdsOnEitherSide) {
  RecordBatch target = Numbered(0, 2);
  target.AppendRange(Numbered(2, 2, "users"), 0, 2);
  ASSERT_TRUE(target.has_destination_ids());
  EXPECT_EQ(target.destination_id(0), "");
  EXPECT_EQ(target.destination_id(3), "users");

  RecordBatch routed = Numbered(0, 1, "orders");
  routed.AppendRange(Numbered(1, 2), 0, 2);
  EXPECT_EQ(routed.destination_id(0), "orders");
  EXPECT_EQ(routed.destination_id(2), "");
  EXPECT_EQ(routed.PayloadBytes(), std::string("{\"n\":0}{\"n\":1}{\"n\":2}").size());
}

TEST(RecordBatchTest, ClearedBatchKeepsItsCapacityForTheNextAppend) {
  RecordBatch buffer = Numbered(0, 100);
  size_t capacity = buffer.payload_buffer().capacity();
  buffer.Clear();
  EXPECT_TRUE(buffer.empty());
  buffer.AppendRange(Numbered(0, 50), 0, 50);
  EXPECT_EQ(buffer.payload_buffer().capacity(), capacity);
  EXPECT_EQ(buffer.id(49), "id49");
}

TEST(RecordBatchTest, PayloadWrittenInPlaceIsCommittedWithItsRecord) {
  RecordBatch batch;
  batch.Add("a", "{}", 1);
  std::string& payloads = batch.OpenPayload();
  size_t mark = payloads.size();
  payloads += "{\"half";  // A partial write, undone.
  payloads.resize(mark);
  payloads += "{\"k\": 1}";
  batch.CommitPayload("b", 2, "elsewhere");
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch.payload(0), "{}");
  EXPECT_EQ(batch.payload(1), "{\"k\": 1}");
  EXPECT_EQ(batch.id(1), "b");
  EXPECT_EQ(batch.timestamp_us(1), 2);
  EXPECT_EQ(batch.destination_id(0), "");
  EXPECT_EQ(batch.destination_id(1), "elsewhere");
}

}  // namespace
}  // namespace bizon
