#include "connectors/sources/kafka/kafka_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "bizon/secret_mask.h"
#include "kafka/client.h"
#include "testing/test_servers.h"

namespace bizon::kafka {
namespace {

std::map<std::string, std::string> Settings(const KafkaSourceOptions& options) {
  return {options.client_settings.begin(), options.client_settings.end()};
}

SourceContext Context(Value config) {
  return {.pipeline_name = "p",
          .stream = "topic",
          .sync_mode = SyncMode::kStream,
          .config = std::move(config)};
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
                          // Static membership even without HOSTNAME: from gethostname().
                          {"group.instance.id", StaticMemberId("p", HostName(), "")},
                      }));
  EXPECT_FALSE(HostName().empty());
  EXPECT_EQ(options->registry.type, RegistryType::kConfluent);
  EXPECT_EQ(options->topics.size(), 1u);
  EXPECT_EQ(SecretMask::Global().Redact("x kafka-pw-1234 y"), "x **** y");
}

TEST(KafkaOptionsTest, HostnameGivesAStaticMemberUnlessConfigured) {
  ::setenv("HOSTNAME", "pod-7", 1);
  auto options =
      ReadKafkaOptions(Context(Value(Value::Map{{"bootstrap_servers", "b:1"}, {"group_id", "g"}})));
  ASSERT_TRUE(options.has_value());
  // <pipeline>.<host>: stable per pipeline and host, whatever the group.
  EXPECT_EQ(Settings(*options)["group.instance.id"], "p.pod-7");
  EXPECT_EQ(Settings(*options).count("sasl.mechanisms"), 0u);  // No authentication block.

  auto configured = ReadKafkaOptions(Context(
      Value(Value::Map{{"bootstrap_servers", "b:1"},
                       {"consumer_config", Value(Value::Map{{"group.instance.id", "mine"}})}})));
  ASSERT_TRUE(configured.has_value());
  EXPECT_EQ(Settings(*configured)["group.instance.id"], "mine");
  ::unsetenv("HOSTNAME");
}

TEST(KafkaOptionsTest, WithoutHostnameTheStaticMemberComesFromGethostname) {
  // HOSTNAME is a shell variable that is rarely exported outside containers.
  ::unsetenv("HOSTNAME");
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof(name) - 1), 0);
  ASSERT_NE(name[0], '\0');
  EXPECT_EQ(HostName(), name);
  SourceContext context = Context(Value(Value::Map{{"bootstrap_servers", "b:1"}}));
  context.pipeline_name = "orders";
  auto options = ReadKafkaOptions(context);
  ASSERT_TRUE(options.has_value());
  EXPECT_EQ(Settings(*options)["group.instance.id"], StaticMemberId("orders", name, ""));
  EXPECT_EQ(Settings(*options)["group.instance.id"].rfind("orders.", 0), 0u);

  // Several processes of one pipeline on one host: `member` tells them apart.
  context.config.Set("member", Value("2"));
  auto second = ReadKafkaOptions(context);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->member, "2");
  EXPECT_EQ(Settings(*second)["group.instance.id"], StaticMemberId("orders", name, "2"));
  EXPECT_NE(Settings(*second)["group.instance.id"], Settings(*options)["group.instance.id"]);

  // A bounded read joins no group: no member id.
  context.sync_mode = SyncMode::kFullRefresh;
  auto bounded = ReadKafkaOptions(context);
  ASSERT_TRUE(bounded.has_value());
  EXPECT_EQ(Settings(*bounded).count("group.instance.id"), 0u);
}

TEST(KafkaStaticMemberIdTest, IsReadableStableAndKeepsDistinctInputsApart) {
  EXPECT_EQ(StaticMemberId("orders", "host-1", ""), "orders.host-1");
  EXPECT_EQ(StaticMemberId("orders", "host-1", "0"), "orders.host-1.0");
  EXPECT_EQ(StaticMemberId("orders", "host-1", "0"), StaticMemberId("orders", "host-1", "0"));
  EXPECT_EQ(StaticMemberId("", "h", ""), "bizon.h");
  EXPECT_NE(StaticMemberId("orders", "host-1", ""), StaticMemberId("orders", "host-2", ""));
  EXPECT_NE(StaticMemberId("orders", "host-1", ""), StaticMemberId("refunds", "host-1", ""));

  // Kafka accepts [A-Za-z0-9._-]: others become '_', and a hash keeps "a b" apart from "a_b",
  // and a dotted host name apart from a pipeline.member split.
  std::string spaced = StaticMemberId("my pipeline", "vm.example.com", "");
  EXPECT_EQ(spaced.rfind("my_pipeline.vm_example_com.", 0), 0u) << spaced;
  EXPECT_NE(spaced, StaticMemberId("my_pipeline", "vm_example_com", ""));
  EXPECT_NE(StaticMemberId("a", "b.c", ""), StaticMemberId("a", "b", "c"));
  for (const std::string& id : {spaced, StaticMemberId("p/ü", "h", "x y")}) {
    for (char c : id) {
      EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')
          << id;
    }
  }

  // At most 249 characters, still distinct past the cut.
  std::string long_name(300, 'p');
  std::string cut = StaticMemberId(long_name, "h", "1");
  EXPECT_EQ(cut.size(), 249u);
  EXPECT_NE(cut, StaticMemberId(long_name, "h", "2"));
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

// Broker-backed: BIZON_KAFKA_BOOTSTRAP names the test broker (scripts/test-servers.sh).
class QuietEvents final : public ClientEvents {
 public:
  void OnError(ErrorCode, std::string) override {}
  void OnLog(int, std::string_view, std::string) override {}
};

ClientConfig NewConfig(const std::string& bootstrap, const std::string& group = "") {
  ClientConfig config;
  EXPECT_TRUE(config.Set("bootstrap.servers", bootstrap).ok());
  if (!group.empty()) {
    EXPECT_TRUE(config.Set("group.id", group).ok());
  }
  return config;
}

void CountDelivery(void* opaque, ErrorCode error) {
  if (error == ErrorCode::kNoError) ++*static_cast<int*>(opaque);
}

/// Produces `count` messages to `topic` (created by the broker on first use, one partition).
void Produce(const std::string& bootstrap, const std::string& topic, int count) {
  QuietEvents events;
  auto producer = Producer::Open(NewConfig(bootstrap), events, CountDelivery);
  ASSERT_TRUE(producer.has_value()) << producer.error().message();
  int delivered = 0;
  for (int i = 0; i < count; ++i) {
    std::string value = "{\"n\": " + std::to_string(i) + "}";
    EXPECT_EQ((*producer)->Produce(topic, "", value, &delivered), ErrorCode::kNoError);
  }
  EXPECT_EQ((*producer)->Flush(std::chrono::seconds(30)), ErrorCode::kNoError);
  EXPECT_EQ(delivered, count);
}

/// The group's committed offset of partition 0 (kOffsetInvalid when none).
int64_t CommittedOffset(const std::string& bootstrap, const std::string& group,
                        const std::string& topic) {
  QuietEvents events;
  auto reader = Consumer::Open(NewConfig(bootstrap, group), events, /*subscribe=*/false);
  if (!reader) return -2;
  PartitionList partitions(1);
  partitions.Add(topic, 0, kOffsetInvalid);
  // Neither a real offset nor kOffsetInvalid: the call failed.
  if ((*reader)->Committed(partitions, std::chrono::seconds(10)) != ErrorCode::kNoError) return -2;
  return partitions.at(0).offset;
}

TEST(KafkaSourceBrokerTest, ACursorAcknowledgedBeforeTheGroupAssignedItsPartitionsIsSentLater) {
  const char* bootstrap = std::getenv("BIZON_KAFKA_BOOTSTRAP");
  if (bootstrap == nullptr) BIZON_SKIP_OR_FAIL("BIZON_KAFKA_BOOTSTRAP is not set (no broker)");
  const std::string suffix =
      std::to_string(::getpid()) + "-" +
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  const std::string topic = "unit-unsent-commit-" + suffix;
  const std::string group = "unit-unsent-commit-" + suffix;
  Produce(bootstrap, topic, 10);

  KafkaSourceOptions options;
  options.topics = {{topic, "events"}};
  options.bootstrap_servers = bootstrap;
  options.group_id = group;
  options.avro = false;
  options.consumer_timeout_s = 2;
  options.batch_size = 100;
  options.client_settings = {{"bootstrap.servers", bootstrap},
                             {"group.id", group},
                             {"auto.offset.reset", "earliest"},
                             {"enable.auto.commit", "false"}};
  KafkaSource source(options);
  ASSERT_TRUE(source.CheckConnection().ok());
  // The engine acknowledges a recorded cursor while the group has not assigned anything yet
  // (a first join, or a rejoin after the consumer was recreated): nothing can be sent now...
  Value five(Value::Map{{topic, Value(Value::Map{{"0", Value(int64_t{5})}})}});
  ASSERT_TRUE(source.Commit(five).ok());
  EXPECT_EQ(CommittedOffset(bootstrap, group, topic), kOffsetInvalid);
  Result<SourceIteration> first = source.Get(Value::EmptyMap());
  ASSERT_TRUE(first.has_value()) << first.error().message();
  EXPECT_EQ(first->records.size(), 10u);
  // ...and no later cursor comes to replace it: the next Get sends it, once assigned.
  Result<SourceIteration> second = source.Get(first->next_pagination);
  ASSERT_TRUE(second.has_value()) << second.error().message();
  EXPECT_EQ(second->records.size(), 0u);
  EXPECT_EQ(CommittedOffset(bootstrap, group, topic), 5);
}

TEST(KafkaTopicsFromStreamsTest, StreamsFillEmptyTopicsAndWinOverListedOnes) {
  auto config = [](Value topics) {
    Value stream_users(
        Value::Map{{"name", Value("users")},
                   {"source", Value(Value::Map{{"topic", Value("t.users")}})},
                   {"destination", Value(Value::Map{{"table_id", Value("p.d.users")}})}});
    Value stream_untopiced(
        Value::Map{{"name", Value("other")},
                   {"destination", Value(Value::Map{{"table_id", Value("p.d.other")}})}});
    return Value(Value::Map{
        {"source", Value(Value::Map{{"name", Value("kafka")}, {"topics", std::move(topics)}})},
        {"streams", Value(Value::List{std::move(stream_users), std::move(stream_untopiced)})}});
  };
  Value empty = config(Value::EmptyList());
  TopicsFromStreams(empty);
  EXPECT_EQ(empty.FindPath("source.topics")->ToJson(),
            R"([{"name":"t.users","destination_id":"p.d.users"}])");

  Value listed = config(Value(Value::List{
      Value(Value::Map{{"name", Value("t.users")}, {"destination_id", Value("mine")}}),
      Value(Value::Map{{"name", Value("t.other")}, {"destination_id", Value("kept")}})}));
  TopicsFromStreams(listed);
  EXPECT_EQ(listed.FindPath("source.topics")->ToJson(),
            R"([{"name":"t.users","destination_id":"p.d.users"},)"
            R"({"name":"t.other","destination_id":"kept"}])");
}

}  // namespace
}  // namespace bizon::kafka
