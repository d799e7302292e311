#include "kafka/client_config.h"

#include <gtest/gtest.h>

#include <string>

#include "bizon/secret_mask.h"

namespace bizon::kafka {
namespace {

TEST(KafkaClientConfigTest, AcceptsKnownSettings) {
  ClientConfig config;
  EXPECT_TRUE(config.Set("bootstrap.servers", "127.0.0.1:9092").ok());
  EXPECT_TRUE(config.Set("fetch.min.bytes", "10", "source.consumer_config.fetch.min.bytes").ok());
  EXPECT_TRUE(config.Set("sasl.password", "anything goes").ok());
}

TEST(KafkaClientConfigTest, AnUnknownPropertyIsAConfigErrorNamingItAndItsPath) {
  ClientConfig config;
  Status refused = config.Set("fetch.min.byte", "10", "source.consumer_config.fetch.min.byte");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.failure_class(), FailureClass::kConfig);
  EXPECT_EQ(refused.message().rfind("source.consumer_config.fetch.min.byte: librdkafka rejects "
                                    "fetch.min.byte: ",
                                    0),
            0u)
      << refused.message();

  // A setting bizon derives has no path: the property alone.
  Status derived = config.Set("no.such.property", "1");
  ASSERT_FALSE(derived.ok());
  EXPECT_EQ(derived.message().rfind("librdkafka rejects no.such.property: ", 0), 0u)
      << derived.message();
}

TEST(KafkaClientConfigTest, AnInvalidValueIsAConfigError) {
  ClientConfig config;
  Status refused =
      config.Set("enable.auto.commit", "maybe", "source.consumer_config.enable.auto.commit");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("source.consumer_config.enable.auto.commit"), std::string::npos);
  EXPECT_NE(refused.message().find("librdkafka rejects enable.auto.commit"), std::string::npos);
}

TEST(KafkaClientConfigTest, SecretsNeverAppearInTheError) {
  ClientConfig config;
  // librdkafka quotes the value of an enumeration it refuses...
  Status quoted = config.Set("auto.offset.reset", "unregistered-9911");
  ASSERT_FALSE(quoted.ok());
  ASSERT_NE(quoted.message().find("\"unregistered-9911\""), std::string::npos) << quoted.message();
  // ...so a registered secret is masked in its reason.
  SecretMask::Global().Add("kafka-secret-5309");
  Status masked = config.Set("auto.offset.reset", "kafka-secret-5309",
                             "source.consumer_config.auto.offset.reset");
  ASSERT_FALSE(masked.ok());
  EXPECT_EQ(masked.message().find("kafka-secret-5309"), std::string::npos) << masked.message();
  EXPECT_NE(masked.message().find("\"****\""), std::string::npos) << masked.message();
  EXPECT_NE(masked.message().find("librdkafka rejects auto.offset.reset"), std::string::npos);
}

TEST(KafkaClientConfigTest, CredentialNamesAreSecret) {
  EXPECT_TRUE(IsSecretSetting("sasl.password"));
  EXPECT_TRUE(IsSecretSetting("sasl.username"));
  EXPECT_TRUE(IsSecretSetting("ssl.key.password"));
  EXPECT_FALSE(IsSecretSetting("bootstrap.servers"));
  EXPECT_FALSE(IsSecretSetting("group.id"));
}

TEST(KafkaClientConfigTest, ASettingAfterReleaseIsRefused) {
  ClientConfig config;
  ClientConfig moved = std::move(config);
  Status after_move = config.Set("group.id", "g");  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(after_move.code(), StatusCode::kInternal);
  EXPECT_TRUE(moved.Set("group.id", "g").ok());
}

}  // namespace
}  // namespace bizon::kafka
