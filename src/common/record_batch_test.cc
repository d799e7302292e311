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

TEST(RecordBatchTest, AddWithWritesThePayloadInPlaceAsAddWould) {
  RecordBatch added;
  RecordBatch written;
  for (int i = 0; i < 5; ++i) {
    std::string payload = "{\"n\":" + std::to_string(i) + "}";
    std::string_view route = i == 3 ? "side" : "";
    added.Add("id" + std::to_string(i), payload, 1000 + i, route);
    written.AddWith(
        "id" + std::to_string(i), [&](std::string& out) { out += payload; }, 1000 + i, route);
  }
  ASSERT_EQ(written.size(), 5u);
  EXPECT_EQ(written.payload_buffer(), added.payload_buffer());
  EXPECT_EQ(written.id_buffer(), added.id_buffer());
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(written.payload(i), added.payload(i));
    EXPECT_EQ(written.timestamp_us(i), added.timestamp_us(i));
    EXPECT_EQ(written.destination_id(i), added.destination_id(i));
  }
  EXPECT_EQ(written.destination_id(3), "side");
  EXPECT_EQ(written.destination_id(2), "");
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

}  // namespace
}  // namespace bizon
