#include "connectors/sources/kafka/kafka_connection.h"

#include <gtest/gtest.h>

#include <string>

namespace bizon::kafka {
namespace {

Result<KafkaSourceOptions> Read(Value consumer_config) {
  SourceContext context{
      .pipeline_name = "p",
      .stream = "topic",
      .sync_mode = SyncMode::kFullRefresh,
      .config = Value(Value::Map{
          {"bootstrap_servers", "127.0.0.1:9092"},
          {"group_id", "g"},
          {"consumer_config", std::move(consumer_config)},
          {"authentication",
           Value(Value::Map{{"type", "basic"},
                            {"params", Value(Value::Map{{"username", "alice"},
                                                        {"password", "kafka-pw-8642"}})}})}})};
  return ReadKafkaOptions(context);
}

TEST(KafkaConsumerConfigTest, AnUnknownConsumerSettingNamesItsYamlPath) {
  auto options = Read(Value(Value::Map{{"fetch.min.byte", 10}}));
  ASSERT_TRUE(options.has_value()) << options.error().message();
  auto config = ConsumerConfig(*options);
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(config.error().failure_class(), FailureClass::kConfig);
  EXPECT_EQ(config.error().message().rfind(
                "source.consumer_config.fetch.min.byte: librdkafka rejects fetch.min.byte: ", 0),
            0u)
      << config.error().message();
  EXPECT_EQ(config.error().message().find("kafka-pw-8642"), std::string::npos);
}

TEST(KafkaConsumerConfigTest, AnInvalidValueNamesItsYamlPathAndNoSecret) {
  auto options = Read(Value(Value::Map{{"auto.offset.reset", "kafka-pw-8642"}}));
  ASSERT_TRUE(options.has_value()) << options.error().message();
  auto config = ConsumerConfig(*options);
  ASSERT_FALSE(config.has_value());
  const std::string& message = config.error().message();
  EXPECT_EQ(message.rfind("source.consumer_config.auto.offset.reset: librdkafka rejects "
                          "auto.offset.reset: ",
                          0),
            0u)
      << message;
  // The password, registered as a secret, is masked even where librdkafka quotes it.
  EXPECT_EQ(message.find("kafka-pw-8642"), std::string::npos) << message;
}

TEST(KafkaConsumerConfigTest, ValidSettingsWithBizonsDefaultsAreAccepted) {
  auto options = Read(Value(Value::Map{
      {"security.protocol", "PLAINTEXT"}, {"enable.auto.commit", false}, {"fetch.min.bytes", 10}}));
  ASSERT_TRUE(options.has_value()) << options.error().message();
  EXPECT_EQ(options->setting_paths.at("fetch.min.bytes"), "source.consumer_config.fetch.min.bytes");
  EXPECT_EQ(options->setting_paths.at("sasl.password"), "source.authentication.params.password");
  EXPECT_EQ(options->setting_paths.at("group.id"), "source.group_id");
  EXPECT_FALSE(options->setting_paths.contains("sasl.mechanisms"));  // Derived.
  auto config = ConsumerConfig(*options);
  EXPECT_TRUE(config.has_value()) << config.error().message();
}

}  // namespace
}  // namespace bizon::kafka
