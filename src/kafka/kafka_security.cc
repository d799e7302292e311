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

void LastClientError::OnError(int error, std::string text) {
  std::lock_guard lock(mutex_);
  if (error == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN && !text_.empty()) return;
  text_ = std::move(text);
}

void LastClientError::OnLog(std::string_view facility, std::string text) {
  if (facility != "FAIL") return;
  std::lock_guard lock(mutex_);
  text_ = std::move(text);
}

std::string LastClientError::Get() const {
  std::lock_guard lock(mutex_);
  return text_;
}

void LastClientError::Clear() {
  std::lock_guard lock(mutex_);
  text_.clear();
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
  // Older librdkafka says this itself ("might be caused by incorrect security.protocol"); since
  // 2.x the log line only names the state the connection was closed in.
  if (last_error.find("APIVERSION_QUERY") != std::string_view::npos &&
      last_error.find("security.protocol") == std::string_view::npos) {
    hint +=
        " (the broker closed the connection before answering: check that security.protocol "
        "matches the listener, SSL or SASL_SSL for a TLS one)";
  }
  return hint;
}

}  // namespace bizon::kafka
