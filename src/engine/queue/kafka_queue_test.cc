#include "engine/queue/kafka_queue.h"

#include <gtest/gtest.h>

#include <string>

#include "bizon/secret_mask.h"

namespace bizon {
namespace {

KafkaQueueConfig Config(std::vector<std::pair<std::string, std::string>> settings) {
  return {.bootstrap_servers = "127.0.0.1:1",
          .topic = "frames",
          .group_id = "g",
          .auto_offset_reset = "earliest",
          .max_message_bytes = 1'000'000,
          .consumer_prefetch_bytes = 1 << 20,
          .client_settings = std::move(settings)};
}

// Refused before any connection is tried: no broker needed.
TEST(KafkaQueueTest, AClientSettingLibrdkafkaRefusesIsAQueueConfigErrorNamingIt) {
  for (bool receiver : {false, true}) {
    KafkaQueueConfig config = Config({{"fetch.min.byte", "1"}});
    Status refused = receiver ? OpenKafkaReceiver(config).error() : OpenKafkaSender(config).error();
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(refused.failure_class(), FailureClass::kQueue);
    EXPECT_EQ(refused.message().rfind(
                  "kafka queue: queue.client_config.fetch.min.byte: librdkafka rejects "
                  "fetch.min.byte: ",
                  0),
              0u)
        << refused.message();
  }
}

TEST(KafkaQueueTest, ARefusedValueNeverShowsASecret) {
  SecretMask::Global().Add("queue-pw-2718");
  KafkaQueueConfig config =
      Config({{"sasl.password", "queue-pw-2718"}, {"security.protocol", "queue-pw-2718"}});
  Status refused = OpenKafkaReceiver(config).error();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("queue.client_config.security.protocol"), std::string::npos)
      << refused.message();
  EXPECT_EQ(refused.message().find("queue-pw-2718"), std::string::npos) << refused.message();
}

TEST(KafkaQueueTest, SettingsBizonMakesItselfAreRefused) {
  Status refused = OpenKafkaSender(Config({{"acks", "1"}})).error();
  EXPECT_EQ(refused.message(), "kafka queue: queue.client_config.acks: bizon sets this itself");
}

}  // namespace
}  // namespace bizon
