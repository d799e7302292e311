#include "connectors/sources/kafka/message_decoder.h"

#include <gtest/gtest.h>

#include <string>

#include "bizon/clock.h"
#include "bizon/value.h"
#include "testing/loopback_http_server.h"

namespace bizon::kafka {
namespace {

KafkaSourceOptions Options() {
  KafkaSourceOptions options;
  options.topics = {{"orders", "project.dataset.orders"}};
  return options;
}

MessageFields Fields(std::string_view value) {
  return {.topic = "orders",
          .partition = 2,
          .offset = 41,
          .timestamp_ms = 1700000000123,
          .value = value};
}

TEST(KafkaMessageDecoderTest, JsonValueKeyAndHeadersBecomeTheRecord) {
  MessageDecoder decoder(Options());
  RecordBatch records;
  MessageFields message = Fields(R"({"amount": 3})");
  message.key = R"({"id": 7})";
  message.headers = {{"trace", "abc"}, {"none", std::nullopt}};
  ASSERT_TRUE(decoder.Append(message, records).ok());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records.id(0), "partition_2_offset_41");
  EXPECT_EQ(records.timestamp_us(0), 1700000000123 * 1000);
  EXPECT_EQ(records.destination_id(0), "project.dataset.orders");
  EXPECT_EQ(records.payload(0),
            R"({"topic":"orders","offset":41,"partition":2,"timestamp":1700000000123,)"
            R"("keys":{"id": 7},"headers":{"trace":"abc","none":null},)"
            R"("value":{"amount": 3},"schema":{}})");
  // The headers' buffer is handed back for the next message.
  EXPECT_EQ(message.headers.size(), 2u);
}

TEST(KafkaMessageDecoderTest, WithoutKeyOrTimestampOrRoute) {
  MessageDecoder decoder(Options());
  RecordBatch records;
  MessageFields message = Fields("[1]");
  message.topic = "unrouted";
  message.timestamp_ms = -1;
  message.key = "";  // An empty key counts as none.
  int64_t before = NowMicros() / 1000;
  ASSERT_TRUE(decoder.Append(message, records).ok());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records.destination_id(0), "");
  EXPECT_GE(records.timestamp_us(0) / 1000, before);
  auto record = Value::FromJson(records.payload(0));
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->Find("keys")->ToJson(), "{}");
  EXPECT_EQ(record->GetInteger("timestamp"), records.timestamp_us(0) / 1000);
}

TEST(KafkaMessageDecoderTest, EmptyValuesAreSkippedOnlyWhenAsked) {
  KafkaSourceOptions options = Options();
  RecordBatch records;
  MessageFields tombstone = Fields("");
  Status failed = MessageDecoder(options).Append(tombstone, records);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("cannot decode the value of topic orders partition 2 offset 41"),
            std::string::npos)
      << failed.message();

  options.skip_message_empty_value = true;
  EXPECT_TRUE(MessageDecoder(options).Append(tombstone, records).ok());
  EXPECT_EQ(records.size(), 0u);
}

TEST(KafkaMessageDecoderTest, InvalidKeysFailOrAreSkipped) {
  KafkaSourceOptions options = Options();
  RecordBatch records;
  MessageFields message = Fields("{}");
  message.key = "plain-key";
  Status failed = MessageDecoder(options).Append(message, records);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("topic orders partition 2 offset 41"), std::string::npos)
      << failed.message();

  options.skip_message_invalid_keys = true;
  EXPECT_TRUE(MessageDecoder(options).Append(message, records).ok());
  EXPECT_EQ(records.size(), 0u);
}

TEST(KafkaMessageDecoderTest, UndecodableValuesFailOrAreSkipped) {
  KafkaSourceOptions options = Options();
  RecordBatch records;
  MessageFields message = Fields("not json");
  Status failed = MessageDecoder(options).Append(message, records);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("cannot decode the value of topic orders partition 2 offset 41"),
            std::string::npos);
  EXPECT_NE(failed.message().find("invalid JSON at byte 0"), std::string::npos) << failed.message();

  options.skip_message_on_decode_error = true;
  MessageDecoder skipping(options);
  EXPECT_TRUE(skipping.Append(message, records).ok());
  EXPECT_EQ(records.size(), 0u);
  // The next message decodes as usual, its invalid UTF-8 repaired.
  MessageFields repaired = Fields("\"a\xFF\"");
  ASSERT_TRUE(skipping.Append(repaired, records).ok());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_NE(records.payload(0).find("\"value\":\"a\xEF\xBF\xBD\""), std::string::npos);
}

TEST(KafkaMessageDecoderTest, AvroValuesAreDecodedWithTheRegistrySchema) {
  testing_support::LoopbackHttpServer registry;
  registry.ExpectJson("GET", "/schemas/ids/7",
                      R"({"schema": "{\"type\":\"record\",\"name\":\"R\",\"fields\":)"
                      R"([{\"name\":\"id\",\"type\":\"long\"}]}"})");
  KafkaSourceOptions options = Options();
  options.avro = true;
  options.registry = {.type = RegistryType::kConfluent, .url = registry.url()};
  MessageDecoder decoder(options);
  RecordBatch records;
  // Confluent header (magic 0, schema id 7), then the Avro long 3 (zigzag: 6).
  const std::string value("\x00\x00\x00\x00\x07\x06", 6);
  MessageFields message = Fields(value);
  ASSERT_TRUE(decoder.Append(message, records).ok());
  // Fetched once: the second message of the schema comes from the cache.
  ASSERT_TRUE(decoder.Append(message, records).ok());
  ASSERT_EQ(records.size(), 2u);
  auto record = Value::FromJson(records.payload(1));
  ASSERT_TRUE(record.has_value()) << records.payload(1);
  EXPECT_EQ(record->Find("value")->ToJson(), R"({"id":3})");
  EXPECT_EQ(record->FindPath("schema.name")->AsString(), "Envelope");

  // A value without the serializer's header is a decode error.
  MessageFields bare = Fields("\x06");
  Status failed = decoder.Append(bare, records);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("cannot decode the value of topic orders"), std::string::npos);
}

}  // namespace
}  // namespace bizon::kafka
