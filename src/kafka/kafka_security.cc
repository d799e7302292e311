#include "kafka/kafka_security.h"

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>

namespace bizon::kafka {

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

std::string ConnectionHint(std::string_view last_error) {
  if (last_error.empty()) return "";
  std::string hint = fmt::format("; last client error: {}", last_error);
  // librdkafka sometimes says this itself ("might be caused by incorrect security.protocol");
  // more often its log line only names the state the connection was closed in.
  if (last_error.find("APIVERSION_QUERY") != std::string_view::npos &&
      last_error.find("security.protocol") == std::string_view::npos) {
    hint +=
        " (the broker closed the connection before answering: check that security.protocol "
        "matches the listener, SSL or SASL_SSL for a TLS one)";
  }
  return hint;
}

}  // namespace bizon::kafka
