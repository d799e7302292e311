#include "engine/queue/queue_factory.h"

#include <gtest/gtest.h>

#include "bizon/build_features.h"
#include "bizon/secret_mask.h"

namespace bizon {
namespace {

Value Kafka(Value::Map queue) {
  queue.emplace_back("bootstrap_server", Value("broker:9093"));
  return Value(Value::Map{{"type", Value("kafka")},
                          {"config", Value(Value::Map{{"queue", Value(std::move(queue))}})}});
}

std::string Setting(const KafkaQueueConfig& config, const std::string& key) {
  for (const auto& [name, value] : config.client_settings) {
    if (name == key) return value;
  }
  return "<unset>";
}

TEST(QueueFactoryTlsTest, KafkaCredentialsAreSaslPlainByDefaultAndMasked) {
  auto broker = ReadBrokerQueueConfig(Kafka(
      {{"client_config", Value(Value::Map{{"security.protocol", Value("SASL_SSL")},
                                          {"ssl.ca.location", Value("/etc/ca.pem")}})},
       {"authentication",
        Value(Value::Map{{"type", Value("basic")},
                         {"params", Value(Value::Map{{"username", Value("bizon")},
                                                     {"password", Value("queue-pw-5513")}})}})}}));
  ASSERT_TRUE(broker.has_value());
  const KafkaQueueConfig& kafka = broker->kafka;
  EXPECT_EQ(Setting(kafka, "security.protocol"), "SASL_SSL");
  EXPECT_EQ(Setting(kafka, "ssl.ca.location"), "/etc/ca.pem");
  EXPECT_EQ(Setting(kafka, "sasl.mechanisms"), "PLAIN");
  EXPECT_EQ(Setting(kafka, "sasl.username"), "bizon");
  EXPECT_EQ(Setting(kafka, "sasl.password"), "queue-pw-5513");
  EXPECT_EQ(SecretMask::Global().Redact("login queue-pw-5513 refused"), "login **** refused");
}

TEST(QueueFactoryTlsTest, KafkaMechanismFromClientConfigWins) {
  auto broker = ReadBrokerQueueConfig(
      Kafka({{"client_config", Value(Value::Map{{"sasl.mechanisms", Value("SCRAM-SHA-512")},
                                                {"ssl.key.password", Value("key-pw-9021")}})},
             {"authentication",
              Value(Value::Map{{"params", Value(Value::Map{{"username", Value("u")},
                                                           {"password", Value("p-7781")}})}})}}));
  ASSERT_TRUE(broker.has_value());
  EXPECT_EQ(Setting(broker->kafka, "sasl.mechanisms"), "SCRAM-SHA-512");
  EXPECT_EQ(SecretMask::Global().Redact("key-pw-9021"), "****");
}

TEST(QueueFactoryTlsTest, KafkaWithoutSecurityKeysSetsNothing) {
  auto broker = ReadBrokerQueueConfig(Kafka({}));
  ASSERT_TRUE(broker.has_value());
  EXPECT_TRUE(broker->kafka.client_settings.empty());
}

TEST(QueueFactoryTlsTest, RabbitmqTlsBlockTurnsTlsOn) {
  Value::Map tls = {{"ca_certificate", Value("/ca.pem")},
                    {"client_certificate", Value("/client.pem")},
                    {"client_key", Value("/client.key")},
                    {"verify_hostname", Value(false)}};
  Value::Map queue = {{"host", Value("mq")},
                      {"port", Value(5671)},
                      {"queue_name", Value("q")},
                      {"tls", Value(std::move(tls))}};
  auto broker = ReadBrokerQueueConfig(
      Value(Value::Map{{"type", Value("rabbitmq")},
                       {"config", Value(Value::Map{{"queue", Value(std::move(queue))}})}}));
  ASSERT_TRUE(broker.has_value());
  const RabbitmqTlsConfig& settings = broker->rabbitmq.tls;
  EXPECT_TRUE(settings.enabled);
  EXPECT_EQ(settings.ca_certificate, "/ca.pem");
  EXPECT_EQ(settings.client_certificate, "/client.pem");
  EXPECT_EQ(settings.client_key, "/client.key");
  EXPECT_TRUE(settings.verify_peer);
  EXPECT_FALSE(settings.verify_hostname);
}

TEST(QueueFactoryTlsTest, RabbitmqWithoutTlsBlockStaysPlain) {
  Value::Map queue = {{"host", Value("mq")}, {"queue_name", Value("q")}};
  auto broker = ReadBrokerQueueConfig(
      Value(Value::Map{{"type", Value("rabbitmq")},
                       {"config", Value(Value::Map{{"queue", Value(std::move(queue))}})}}));
  ASSERT_TRUE(broker.has_value());
  EXPECT_FALSE(broker->rabbitmq.tls.enabled);
}

#if !BIZON_WITH_KAFKA || !BIZON_WITH_RABBITMQ
// A queue of a family left out of this build is refused at both ends, naming the option.
void ExpectQueueRefused(const Value& queue, std::string_view option) {
  auto broker = ReadBrokerQueueConfig(queue);
  ASSERT_TRUE(broker.has_value());
  auto sink = OpenBrokerSink(*broker, "job");
  ASSERT_FALSE(sink.has_value());
  EXPECT_EQ(sink.error().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(sink.error().failure_class(), FailureClass::kConfig);
  EXPECT_NE(sink.error().message().find(option), std::string::npos) << sink.error().message();
  auto source = OpenBrokerSource(*broker, "job", 0);
  ASSERT_FALSE(source.has_value());
  EXPECT_NE(source.error().message().find(option), std::string::npos) << source.error().message();
}
#endif

#if !BIZON_WITH_KAFKA
TEST(QueueFactoryWithoutFamiliesTest, AKafkaQueueIsRefusedNamingItsOption) {
  ExpectQueueRefused(Kafka({{"topic", Value("t")}}), "-DBIZON_WITH_KAFKA=ON");
}
#endif

#if !BIZON_WITH_RABBITMQ
TEST(QueueFactoryWithoutFamiliesTest, ARabbitmqQueueIsRefusedNamingItsOption) {
  Value::Map queue = {{"host", Value("mq")}, {"queue_name", Value("q")}};
  ExpectQueueRefused(
      Value(Value::Map{{"type", Value("rabbitmq")},
                       {"config", Value(Value::Map{{"queue", Value(std::move(queue))}})}}),
      "-DBIZON_WITH_RABBITMQ=ON");
}
#endif

}  // namespace
}  // namespace bizon
