#include "kafka/kafka_security.h"

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>

namespace bizon::kafka {

std::string SaslMechanism(const ClientSettings& settings) {
  for (const auto& [key, value] : settings) {
    if (key == "sasl.mechanisms" || key == "sasl.mechanism") return value;
  }
  return "";
}

bool ScramRejectedByKafka4() { return rd_kafka_version() < 0x020601ff; }

std::string ConnectionHint(const ClientSettings& settings, std::string_view last_error) {
  if (last_error.empty()) return "";
  std::string hint = fmt::format("; last client error: {}", last_error);
  if (SaslMechanism(settings).starts_with("SCRAM") &&
      last_error.find("SASL authentication error") != std::string_view::npos &&
      ScramRejectedByKafka4()) {
    hint += fmt::format(
        " (if the credentials are right: librdkafka {} computes SCRAM proofs that Kafka 4 "
        "brokers reject as invalid credentials, fixed in librdkafka 2.6.1; use PLAIN over "
        "SASL_SSL with such a broker, or a newer librdkafka)",
        rd_kafka_version_str());
  }
  return hint;
}

}  // namespace bizon::kafka
