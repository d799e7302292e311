// What the kafka source and the kafka queue share about authenticated and encrypted brokers:
// turning the last client error of a failed connection into a message that says what to fix.
#pragma once

#include <mutex>
#include <string>
#include <string_view>

namespace bizon::kafka {

/// The last error a client reported (a refused login, a failed TLS handshake, a listener that
/// speaks another protocol), for the message of a connection that does not come up. Fed by the
/// client's error and log callbacks (any thread), with texts already free of secrets.
class LastClientError {
 public:
  /// From the error callback. The generic "brokers are down" that follows a broker's own
  /// closing reason does not replace it.
  void OnError(int error, std::string text);
  /// From the log callback: only a broker connection's failure (facility FAIL) is kept. Recent
  /// librdkafka versions report why a broker closed the connection only there.
  void OnLog(std::string_view facility, std::string text);
  std::string Get() const;
  void Clear();

 private:
  mutable std::mutex mutex_;
  std::string text_;
};

/// Text appended to a failed connection's message: "; last client error: <error>" and, for a
/// connection the broker closed before answering its first request, that security.protocol
/// likely does not match the listener. Empty when `last_error` is. `last_error` must already be
/// free of secrets.
std::string ConnectionHint(std::string_view last_error);

}  // namespace bizon::kafka
