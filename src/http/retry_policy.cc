#include "http/retry_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include "common/ascii.h"

namespace bizon {
namespace {

Status ConfigError(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message), FailureClass::kConfig);
}

Result<double> Seconds(const Value& value, std::string_view what) {
  if (!value.is_number()) {
    return Fail(ConfigError(fmt::format("source.http.{} must be a number of seconds", what)));
  }
  double seconds = value.AsDouble();
  if (seconds < 0) {
    return Fail(ConfigError(fmt::format("source.http.{} must not be negative", what)));
  }
  return seconds;
}

}  // namespace

RetryPolicy RetryPolicy::Legacy() {
  RetryPolicy policy;
  policy.total = 20;
  policy.status_budget = 30;
  policy.backoff_factor = 1;
  policy.status_forcelist.clear();
  policy.retry_after_max.reset();
  return policy;
}

bool RetryPolicy::IsMethodRetryable(std::string_view method) const {
  return std::any_of(
      allowed_methods.begin(), allowed_methods.end(),
      [&](const std::string& allowed) { return EqualsIgnoreAsciiCase(allowed, method); });
}

bool RetryPolicy::IsRetryableStatus(std::string_view method, int status,
                                    bool has_retry_after) const {
  if (!IsMethodRetryable(method)) return false;
  if (std::find(status_forcelist.begin(), status_forcelist.end(), status) !=
      status_forcelist.end()) {
    return true;
  }
  return has_retry_after &&
         std::find(std::begin(kRetryAfterStatuses), std::end(kRetryAfterStatuses), status) !=
             std::end(kRetryAfterStatuses);
}

double RetryPolicy::BackoffSeconds(int consecutive_errors) const {
  if (consecutive_errors <= 1) return 0;
  double wait = backoff_factor * std::pow(2.0, consecutive_errors - 1);
  return std::clamp(wait, 0.0, backoff_max);
}

double RetryPolicy::RetryAfterSeconds(double header_seconds) const {
  double wait = std::max(0.0, header_seconds);
  if (retry_after_max) wait = std::min(wait, *retry_after_max);
  return wait;
}

std::optional<double> ParseRetryAfter(std::string_view header, int64_t now_us) {
  std::string_view text = TrimAsciiSpace(header);
  if (text.empty()) return std::nullopt;
  if (std::all_of(text.begin(), text.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return std::strtod(std::string(text).c_str(), nullptr);  // No throw on absurd lengths.
  }
  // An HTTP-date: "Wed, 21 Oct 2015 07:28:00 GMT" (IMF-fixdate, the only form senders use now).
  std::tm parts{};
  std::string copy(text);
  const char* end = strptime(copy.c_str(), "%a, %d %b %Y %H:%M:%S", &parts);
  if (end == nullptr) return std::nullopt;
  time_t when = timegm(&parts);
  double wait = static_cast<double>(when) - static_cast<double>(now_us) / 1e6;
  return std::max(0.0, wait);
}

Result<HttpPolicy> HttpPolicy::FromSourceConfig(const Value& source_config) {
  const Value* http = source_config.Find("http");
  if (http != nullptr && !http->is_null()) return FromHttpBlock(*http);
  HttpPolicy policy;
  // The seed documents api_config.retry_limit as the retries before giving up; the historical
  // policy takes it as its budget (the original declared it without reading it).
  if (const Value* limit = source_config.FindPath("api_config.retry_limit");
      limit != nullptr && limit->is_integer()) {
    policy.retries.total = static_cast<int>(std::max<int64_t>(0, limit->AsInteger()));
  }
  return policy;
}

Result<HttpPolicy> HttpPolicy::FromHttpBlock(const Value& http) {
  HttpPolicy policy;
  policy.configured = true;
  policy.timeouts = {.connect_s = 10, .read_s = 60};
  policy.retries = RetryPolicy();
  if (!http.is_map()) return Fail(ConfigError("source.http must be a mapping"));

  if (const Value* timeout = http.Find("timeout"); timeout != nullptr && !timeout->is_null()) {
    if (timeout->is_list()) {
      const Value::List& pair = timeout->AsList();
      if (pair.size() != 2) {
        return Fail(
            ConfigError("source.http.timeout must be one number or a [connect, read] pair"));
      }
      BIZON_ASSIGN_OR_RETURN(double connect, Seconds(pair[0], "timeout[0]"));
      BIZON_ASSIGN_OR_RETURN(double read, Seconds(pair[1], "timeout[1]"));
      policy.timeouts = {.connect_s = connect, .read_s = read};
    } else {
      BIZON_ASSIGN_OR_RETURN(double both, Seconds(*timeout, "timeout"));
      policy.timeouts = {.connect_s = both, .read_s = both};
    }
  }
  policy.raise_for_status = http.GetBool("raise_for_status", true);

  const Value* retries = http.Find("retries");
  if (retries == nullptr || retries->is_null()) return policy;
  if (!retries->is_map()) return Fail(ConfigError("source.http.retries must be a mapping"));
  RetryPolicy& retry = policy.retries;
  retry.total = static_cast<int>(std::max<int64_t>(0, retries->GetInteger("total", retry.total)));
  retry.backoff_factor = retries->GetDouble("backoff_factor", retry.backoff_factor);
  if (const Value* list = retries->Find("status_forcelist"); list != nullptr && list->is_list()) {
    retry.status_forcelist.clear();
    for (const Value& status : list->AsList()) {
      if (status.is_integer())
        retry.status_forcelist.push_back(static_cast<int>(status.AsInteger()));
    }
  }
  if (const Value* list = retries->Find("allowed_methods"); list != nullptr && list->is_list()) {
    retry.allowed_methods.clear();
    for (const Value& method : list->AsList()) {
      if (method.is_string()) retry.allowed_methods.push_back(method.AsString());
    }
  }
  if (const Value* cap = retries->Find("retry_after_max"); cap != nullptr) {
    if (cap->is_null()) {
      retry.retry_after_max.reset();
    } else {
      BIZON_ASSIGN_OR_RETURN(double seconds, Seconds(*cap, "retries.retry_after_max"));
      retry.retry_after_max = seconds;
    }
  }
  return policy;
}

}  // namespace bizon
