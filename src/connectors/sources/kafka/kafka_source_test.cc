#include "connectors/sources/kafka/kafka_source.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "config/references.h"

namespace bizon::kafka {
namespace {

std::map<std::string, std::string> Settings(const KafkaSourceOptions& options) {
  return {options.client_settings.begin(), options.client_settings.end()};
}

SourceContext Context(Value config) {
  return {
      .pipeline_name = "p", .stream = "topic", .sync_mode = SyncMode::kStream, .config = config};
}

TEST(KafkaOptionsTest, ConsumerConfigReplacesDefaultsAndDerivedSettingsAreAdded) {
  ::unsetenv("HOSTNAME");
  auto options = ReadKafkaOptions(Context(Value(Value::Map{
      {"bootstrap_servers", "127.0.0.1:9092"},
      {"group_id", "g1"},
      {"topics", Value(Value::List{Value(Value::Map{{"name", "t"}, {"destination_id", "d"}})})},
      {"consumer_config", Value(Value::Map{{"security.protocol", "PLAINTEXT"},
                                           {"enable.auto.commit", false},
                                           {"fetch.min.bytes", 10}})},
      {"authentication",
       Value(Value::Map{
           {"type", "basic"},
           {"params", Value(Value::Map{{"username", "alice"}, {"password", "kafka-pw-1234"}})},
           {"schema_registry_type", "confluent"},
           {"schema_registry_url", "http://127.0.0.1:1"}})}})));
  ASSERT_TRUE(options.has_value()) << options.error().message();
  std::map<std::string, std::string> settings = Settings(*options);
  EXPECT_EQ(settings, (std::map<std::string, std::string>{
                          {"security.protocol", "PLAINTEXT"},
                          {"enable.auto.commit", "false"},
                          {"fetch.min.bytes", "10"},
                          {"sasl.mechanisms", "PLAIN"},
                          {"sasl.username", "alice"},
                          {"sasl.password", "kafka-pw-1234"},
                          {"group.id", "g1"},
                          {"bootstrap.servers", "127.0.0.1:9092"},
                      }));
  EXPECT_EQ(options->registry.type, RegistryType::kConfluent);
  EXPECT_EQ(options->topics.size(), 1u);
  EXPECT_EQ(SecretMask::Global().Redact("x kafka-pw-1234 y"), "x **** y");
}

TEST(KafkaOptionsTest, HostnameGivesAStaticMemberUnlessConfigured) {
  ::setenv("HOSTNAME", "pod-7", 1);
  auto options =
      ReadKafkaOptions(Context(Value(Value::Map{{"bootstrap_servers", "b:1"}, {"group_id", "g"}})));
  ASSERT_TRUE(options.has_value());
  EXPECT_EQ(Settings(*options)["group.instance.id"], "g-pod-7");
  EXPECT_EQ(Settings(*options).count("sasl.mechanisms"), 0u);  // No authentication block.

  auto configured = ReadKafkaOptions(Context(
      Value(Value::Map{{"bootstrap_servers", "b:1"},
                       {"consumer_config", Value(Value::Map{{"group.instance.id", "mine"}})}})));
  ASSERT_TRUE(configured.has_value());
  EXPECT_EQ(Settings(*configured)["group.instance.id"], "mine");
  ::unsetenv("HOSTNAME");
}

TEST(KafkaOptionsTest, RejectsNestedConsumerSettings) {
  auto options = ReadKafkaOptions(Context(
      Value(Value::Map{{"bootstrap_servers", "b:1"},
                       {"consumer_config", Value(Value::Map{{"debug", Value(Value::List{})}})}})));
  ASSERT_FALSE(options.has_value());
  EXPECT_NE(options.error().message().find("source.consumer_config.debug"), std::string::npos);
}

TEST(KafkaSourceTest, CheckConnectionNeedsTopicsAndOneTopicWhenBounded) {
  KafkaSource no_topics(KafkaSourceOptions{});
  Status missing = no_topics.CheckConnection();
  EXPECT_NE(missing.message().find("No topics configured"), std::string::npos);

  KafkaSourceOptions bounded;
  bounded.sync_mode = SyncMode::kFullRefresh;
  bounded.topics = {{"a", "x"}, {"b", "y"}};
  KafkaSource two_topics(bounded);
  Status refused = two_topics.CheckConnection();
  EXPECT_NE(refused.message().find("reads exactly one topic, got 2"), std::string::npos);
}

TEST(KafkaSourceTest, RejectsUnknownClientSettings) {
  KafkaSourceOptions options;
  options.topics = {{"a", "x"}};
  options.client_settings = {{"no.such.setting", "1"}};
  KafkaSource source(options);
  Status created = source.CheckConnection();
  EXPECT_FALSE(created.ok());
  EXPECT_NE(created.message().find("librdkafka rejects no.such.setting"), std::string::npos);
}

}  // namespace
}  // namespace bizon::kafka
