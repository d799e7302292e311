#include "kafka/kafka_security.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

namespace bizon::kafka {
namespace {

TEST(KafkaSecurityTest, MechanismFromEitherSpelling) {
  EXPECT_EQ(SaslMechanism({{"sasl.mechanisms", "SCRAM-SHA-256"}}), "SCRAM-SHA-256");
  EXPECT_EQ(SaslMechanism({{"sasl.mechanism", "PLAIN"}}), "PLAIN");
  EXPECT_EQ(SaslMechanism({{"security.protocol", "SSL"}}), "");
}

TEST(KafkaSecurityTest, HintNamesTheLastError) {
  EXPECT_EQ(ConnectionHint({}, ""), "");
  EXPECT_EQ(ConnectionHint({{"sasl.mechanisms", "PLAIN"}}, "SASL authentication error: x"),
            "; last client error: SASL authentication error: x");
}

TEST(KafkaSecurityTest, ScramFailureExplainsTheLibrdkafkaLimit) {
  std::string hint = ConnectionHint({{"sasl.mechanisms", "SCRAM-SHA-512"}},
                                    "SASL authentication error: invalid credentials");
  bool old_library = rd_kafka_version() < 0x020601ff;
  EXPECT_EQ(ScramRejectedByKafka4(), old_library);
  EXPECT_EQ(hint.find("fixed in librdkafka 2.6.1") != std::string::npos, old_library) << hint;
  // Other failures of a SCRAM client (a refused handshake) get no such note.
  EXPECT_EQ(ConnectionHint({{"sasl.mechanisms", "SCRAM-SHA-512"}}, "SSL handshake failed"),
            "; last client error: SSL handshake failed");
}

}  // namespace
}  // namespace bizon::kafka
