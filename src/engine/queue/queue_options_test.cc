#include "engine/queue/queue_options.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

Value Queue(std::string type, Value::Map server) {
  return Value(Value::Map{{"type", Value(std::move(type))},
                          {"config", Value(Value::Map{{"queue", Value(std::move(server))}})}});
}

// Every option the reader takes, left out: each comes from the declaration (a name the reader
// asked for but the declaration lacks would read as 0 or empty here).
TEST(QueueOptionsTest, KafkaOptionsLeftOutTakeTheDeclaredDefaults) {
  auto broker = ReadBrokerQueueConfig(Queue("kafka", {{"bootstrap_server", Value("b:9092")}}));
  ASSERT_TRUE(broker.has_value());
  EXPECT_EQ(broker->kind, BrokerQueueConfig::Kind::kKafka);
  EXPECT_EQ(broker->max_unconsumed_bytes, 256 * 1024 * 1024);
  const KafkaQueueConfig& kafka = broker->kafka;
  EXPECT_EQ(kafka.bootstrap_servers, "b:9092");
  EXPECT_EQ(kafka.topic, "bizon");
  EXPECT_EQ(kafka.max_message_bytes, 1'000'000);
  EXPECT_EQ(kafka.group_id, "bizon");
  EXPECT_EQ(kafka.auto_offset_reset, "earliest");
  EXPECT_EQ(kafka.consumer_prefetch_bytes, 64 * 1024 * 1024);
  EXPECT_EQ(broker->Describe(), "kafka topic bizon at b:9092");
}

TEST(QueueOptionsTest, RabbitmqOptionsLeftOutTakeTheDeclaredDefaults) {
  auto broker = ReadBrokerQueueConfig(Queue(
      "rabbitmq", {{"host", Value("mq")}, {"queue_name", Value("q")}, {"tls", Value::EmptyMap()}}));
  ASSERT_TRUE(broker.has_value());
  EXPECT_EQ(broker->kind, BrokerQueueConfig::Kind::kRabbitmq);
  EXPECT_EQ(broker->max_unconsumed_bytes, 256 * 1024 * 1024);
  const RabbitmqQueueConfig& rabbitmq = broker->rabbitmq;
  EXPECT_EQ(rabbitmq.port, 5672);
  EXPECT_EQ(rabbitmq.exchange, "");
  EXPECT_EQ(rabbitmq.username, "guest");
  EXPECT_EQ(rabbitmq.password, "guest");
  EXPECT_EQ(rabbitmq.vhost, "/");
  EXPECT_EQ(rabbitmq.max_message_bytes, 8 * 1024 * 1024);
  EXPECT_EQ(rabbitmq.prefetch_count, 64);
  EXPECT_EQ(rabbitmq.consumer_prefetch_bytes, 128 * 1024 * 1024);
  EXPECT_TRUE(rabbitmq.tls.enabled);
  EXPECT_TRUE(rabbitmq.tls.verify_peer);
  EXPECT_TRUE(rabbitmq.tls.verify_hostname);
  EXPECT_EQ(broker->Describe(), "rabbitmq queue q at mq:5672");
}

TEST(QueueOptionsTest, TheInProcessQueueIsNoBroker) {
  EXPECT_FALSE(ReadBrokerQueueConfig(Value::EmptyMap()).has_value());
  EXPECT_FALSE(ReadBrokerQueueConfig(Value(Value::Map{{"type", Value("python_queue")}})));
}

}  // namespace
}  // namespace bizon
