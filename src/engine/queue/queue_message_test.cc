// EncodeMessage/DecodeMessage: every field survives the byte channel, and truncated or corrupt
// bytes are a kDataLoss queue error, never a crash or a half-read message.
#include "engine/queue/queue_message.h"

#include <gtest/gtest.h>

#include <string>

namespace bizon {
namespace {

QueueMessage DataMessage() {
  QueueMessage message;
  message.kind = QueueMessage::Kind::kData;
  message.iteration = 41;
  message.extracted_at_us = 1'700'000'000'123'456;
  message.records.Add("a", R"({"x":1})", 10);
  message.records.Add("b", R"({"x":"\u00e9 \n"})", 20, "table_b");
  message.records.Add(std::string("c\0d", 3), "", -5);
  message.next_pagination.Set("cursor", Value("abc"));
  Value state = Value::EmptyMap();
  state.Set("after", Value(int64_t{99}));
  message.next_state = state;
  return message;
}

QueueMessage RoundTrip(const QueueMessage& message) {
  Result<QueueMessage> decoded = DecodeMessage(EncodeMessage(message));
  EXPECT_TRUE(decoded.has_value()) << decoded.error().ToString();
  return decoded.has_value() ? std::move(*decoded) : QueueMessage{};
}

TEST(QueueMessageTest, ADataMessageRoundTrips) {
  QueueMessage original = DataMessage();
  QueueMessage decoded = RoundTrip(original);
  EXPECT_EQ(decoded.kind, QueueMessage::Kind::kData);
  EXPECT_EQ(decoded.iteration, 41);
  EXPECT_EQ(decoded.extracted_at_us, original.extracted_at_us);
  EXPECT_EQ(decoded.next_pagination.ToJson(), R"({"cursor":"abc"})");
  ASSERT_TRUE(decoded.next_state.has_value());
  EXPECT_EQ(decoded.next_state->ToJson(), R"({"after":99})");
  ASSERT_EQ(decoded.records.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(decoded.records.id(i), original.records.id(i));
    EXPECT_EQ(decoded.records.payload(i), original.records.payload(i));
    EXPECT_EQ(decoded.records.timestamp_us(i), original.records.timestamp_us(i));
    EXPECT_EQ(decoded.records.destination_id(i), original.records.destination_id(i));
    // The receiving side stamps every record with the message's extraction time.
    EXPECT_EQ(decoded.records.extracted_at_us(i), original.extracted_at_us);
  }
  EXPECT_TRUE(decoded.records.has_destination_ids());
  EXPECT_EQ(decoded.records.destination_id(0), "");
  EXPECT_EQ(decoded.records.destination_id(1), "table_b");
  EXPECT_EQ(decoded.records.id(2).size(), 3u);
}

TEST(QueueMessageTest, RecordsWithoutDestinationIdsStayUnrouted) {
  QueueMessage original;
  original.records.Add("a", "{}", 1);
  QueueMessage decoded = RoundTrip(original);
  EXPECT_FALSE(decoded.records.has_destination_ids());
  EXPECT_FALSE(decoded.next_state.has_value());
  EXPECT_EQ(decoded.next_pagination.ToJson(), "{}");
}

TEST(QueueMessageTest, AnExhaustedPaginationStaysNull) {
  QueueMessage original;
  original.next_pagination = Value();
  EXPECT_TRUE(RoundTrip(original).next_pagination.is_null());
}

TEST(QueueMessageTest, ATerminationCarriesWhetherTheSourceIsExhausted) {
  QueueMessage capped;
  capped.kind = QueueMessage::Kind::kTermination;
  capped.iteration = 7;
  capped.source_exhausted = false;
  QueueMessage decoded = RoundTrip(capped);
  EXPECT_EQ(decoded.kind, QueueMessage::Kind::kTermination);
  EXPECT_FALSE(decoded.source_exhausted);
  EXPECT_EQ(decoded.iteration, 7);
  EXPECT_TRUE(decoded.records.empty());
  capped.source_exhausted = true;
  EXPECT_TRUE(RoundTrip(capped).source_exhausted);
}

TEST(QueueMessageTest, AnErrorTerminationCarriesTheStatusAndTheProducersResult) {
  QueueMessage failed;
  failed.kind = QueueMessage::Kind::kErrorTermination;
  failed.error = Status(StatusCode::kUnavailable, "api down: 503", FailureClass::kSource);
  QueueMessage decoded = RoundTrip(failed);
  EXPECT_EQ(decoded.kind, QueueMessage::Kind::kErrorTermination);
  EXPECT_EQ(decoded.error.code(), StatusCode::kUnavailable);
  EXPECT_EQ(decoded.error.failure_class(), FailureClass::kSource);
  EXPECT_EQ(decoded.error.message(), "api down: 503");
}

TEST(QueueMessageTest, EveryTruncationIsADataLossQueueError) {
  std::string bytes = EncodeMessage(DataMessage());
  for (size_t size = 0; size < bytes.size(); ++size) {
    Result<QueueMessage> decoded = DecodeMessage(std::string_view(bytes).substr(0, size));
    ASSERT_FALSE(decoded.has_value()) << "decoded from " << size << " of " << bytes.size();
    EXPECT_EQ(decoded.error().code(), StatusCode::kDataLoss) << size;
    EXPECT_EQ(decoded.error().failure_class(), FailureClass::kQueue) << size;
  }
}

TEST(QueueMessageTest, AWrongMagicOrKindIsRefused) {
  std::string bytes = EncodeMessage(DataMessage());
  std::string bad_magic = bytes;
  bad_magic[0] ^= 0x01;
  EXPECT_EQ(DecodeMessage(bad_magic).error().code(), StatusCode::kDataLoss);
  std::string bad_kind = bytes;
  bad_kind[8] = 3;  // The kind follows the 8-byte magic.
  EXPECT_EQ(DecodeMessage(bad_kind).error().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace bizon
