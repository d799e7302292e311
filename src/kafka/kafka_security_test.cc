#include "kafka/kafka_security.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

namespace bizon::kafka {
namespace {

TEST(KafkaSecurityTest, HintNamesTheLastError) {
  EXPECT_EQ(ConnectionHint(""), "");
  EXPECT_EQ(ConnectionHint("SASL authentication error: x"),
            "; last client error: SASL authentication error: x");
}

TEST(KafkaSecurityTest, ScramFailureIsReportedAsTheBrokerSaidIt) {
  // bizon links librdkafka >= 2.6.1 (CMake refuses older), whose SCRAM proofs Kafka 4 accepts:
  // a refused SCRAM login means wrong credentials, and the message adds nothing to it.
  EXPECT_GE(rd_kafka_version(), 0x020601ff);
  EXPECT_EQ(ConnectionHint("SASL authentication error: invalid credentials"),
            "; last client error: SASL authentication error: invalid credentials");
  EXPECT_EQ(ConnectionHint("SSL handshake failed"), "; last client error: SSL handshake failed");
}

TEST(KafkaSecurityTest, ConnectionClosedBeforeTheFirstReplyPointsAtSecurityProtocol) {
  std::string hint = ConnectionHint(
      "127.0.0.1:9093/bootstrap: Disconnected: connection closed by peer: receive 0 after "
      "POLLIN (after 1ms in state APIVERSION_QUERY)");
  EXPECT_NE(hint.find("check that security.protocol matches the listener"), std::string::npos)
      << hint;
  // When librdkafka's message already says it: not twice.
  hint = ConnectionHint(
      "Disconnected while requesting ApiVersion: might be caused by "
      "incorrect security.protocol configuration (APIVERSION_QUERY)");
  EXPECT_EQ(hint.find("check that"), std::string::npos) << hint;
}

TEST(KafkaSecurityTest, LastErrorKeepsTheBrokersReasonOverAllBrokersDown) {
  LastClientError last;
  last.OnLog("CONNECT", "connecting");
  EXPECT_EQ(last.Get(), "");
  last.OnError(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "1/1 brokers are down");
  EXPECT_EQ(last.Get(), "1/1 brokers are down");
  last.OnLog("FAIL", "closed in state APIVERSION_QUERY");
  last.OnError(RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "1/1 brokers are down");
  EXPECT_EQ(last.Get(), "closed in state APIVERSION_QUERY");
  last.OnError(RD_KAFKA_RESP_ERR__AUTHENTICATION, "SASL authentication error");
  EXPECT_EQ(last.Get(), "SASL authentication error");
  last.Clear();
  EXPECT_EQ(last.Get(), "");
}

}  // namespace
}  // namespace bizon::kafka
