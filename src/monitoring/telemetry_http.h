// The one HTTP call the monitoring exporters make: a body sent with short timeouts, no retries,
// on the sender thread. Failures are returned, never logged here (the exporter counts them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bizon/status.h"

namespace bizon {

using TelemetryHeaders = std::vector<std::pair<std::string, std::string>>;

struct TelemetryResponse {
  int status = 0;
  std::string body;
};

/// `method` PUT or POST; connect timeout 1 s, whole request 2 s. An answer other than 2xx is an
/// error naming the status.
Result<TelemetryResponse> SendTelemetry(const std::string& method, const std::string& url,
                                        const TelemetryHeaders& headers, const std::string& body);

/// CRC-32 (ISO-HDLC, the one gzip trails its data with).
uint32_t Crc32(std::string_view bytes);

/// `body` as one gzip member (RFC 1952) whose deflate data are stored blocks (RFC 1951 §3.2.4):
/// valid for every gzip reader, for intakes that expect `Content-Encoding: gzip`, without a
/// compression library (the size stays the same, plus 18 bytes and 5 per 64 KiB).
std::string GzipStored(std::string_view body);

/// Skips deliveries for a while after a failure, so a sink that is down costs one failed
/// connection every few seconds rather than one per batch.
class DeliveryBackoff {
 public:
  bool ready(int64_t now_us) const { return now_us >= retry_at_us_; }
  void Failed(int64_t now_us) { retry_at_us_ = now_us + 5'000'000; }
  void Succeeded() { retry_at_us_ = 0; }

 private:
  int64_t retry_at_us_ = 0;
};

}  // namespace bizon
