// RetryPolicy and HttpPolicy: when a request is tried again, and how long to wait first.
//
// The rules are urllib3's `Retry`, which the original's requests session mounts, so a pipeline
// retries exactly the responses it retried before:
//
// * A status is retried when it is in `status_forcelist` (and the method is allowed), or, with or
//   without a force-list, when it is 413, 429 or 503 and the response carries `Retry-After`.
// * Connection failures are always retried; read failures (timeouts, truncated bodies) only for
//   allowed methods. Every retry spends one of `total`; status retries also spend `status`.
// * The wait before retry n is `backoff_factor * 2^(n-1)` seconds, none before the first, at most
//   120; a `Retry-After` header replaces it, capped at `retry_after_max` when that is set.
//
// HttpPolicy is what a source's `http` block (or its absence) selects: FromSourceConfig() reads
// the validated `source:` mapping.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

struct RetryPolicy {
  /// Retries of any kind before giving up; the request is sent at most total + 1 times.
  int total = 10;
  /// Status retries before giving up (urllib3's `status`); unset means only `total` counts.
  std::optional<int> status_budget;
  double backoff_factor = 2;
  /// Waits computed from the backoff never exceed this (urllib3's DEFAULT_BACKOFF_MAX).
  double backoff_max = 120;
  std::vector<int> status_forcelist = {429, 500, 502, 503, 504, 520, 522, 524};
  std::vector<std::string> allowed_methods = {"GET", "POST"};
  /// Cap on a Retry-After wait; unset honours the header as sent.
  std::optional<double> retry_after_max = 120;

  /// The original's session without an `http` block: total 20, backoff 1, status budget 30, no
  /// force-list (so only 413/429/503 with Retry-After are retried), uncapped Retry-After.
  static RetryPolicy Legacy();

  bool IsMethodRetryable(std::string_view method) const;
  /// Whether a response with `status` is worth another try.
  bool IsRetryableStatus(std::string_view method, int status, bool has_retry_after) const;
  /// Seconds to wait after `consecutive_errors` failed attempts (1 after the first failure).
  double BackoffSeconds(int consecutive_errors) const;
  /// The wait a Retry-After of `header_seconds` asks for, after the cap.
  double RetryAfterSeconds(double header_seconds) const;
};

/// Statuses urllib3 retries on Retry-After alone.
inline constexpr int kRetryAfterStatuses[] = {413, 429, 503};

/// Parses a Retry-After header: delta-seconds, or an HTTP-date relative to `now_us`. Negative
/// waits become 0; nullopt when the header is unreadable.
std::optional<double> ParseRetryAfter(std::string_view header, int64_t now_us);

struct HttpTimeouts {
  /// Seconds to establish the connection; unset waits for ever.
  std::optional<double> connect_s;
  /// Seconds without receiving a byte once connected; unset waits for ever.
  std::optional<double> read_s;
};

/// The HTTP behaviour of one source's session.
struct HttpPolicy {
  /// True when the source config had an `http` block (even `http: {}`).
  bool configured = false;
  HttpTimeouts timeouts;
  /// Non-2xx responses fail the request; false hands them back to the source.
  bool raise_for_status = true;
  RetryPolicy retries = RetryPolicy::Legacy();

  /// The policy of a validated `source:` mapping: the `http` block when present, else the
  /// historical one with `api_config.retry_limit` as its retry budget.
  static Result<HttpPolicy> FromSourceConfig(const Value& source_config);
  /// Reads one `http` block (defaults apply to missing keys, as the config layer fills them).
  static Result<HttpPolicy> FromHttpBlock(const Value& http);
};

}  // namespace bizon
