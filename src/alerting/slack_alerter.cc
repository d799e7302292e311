#include "alerting/slack_alerter.h"

#include <fmt/format.h>
#include <spdlog/details/log_msg.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <utility>

#include "alerting/alerting_options.h"
#include "bizon/clock.h"
#include "bizon/secret_mask.h"
#include "common/fork_guard.h"
#include "common/logging.h"
#include "http/http_session.h"

namespace bizon {
namespace {

/// Set on the sender thread: what it logs (a failed post, libcurl's debug lines) is never alerted.
thread_local bool t_sending_alerts = false;
int64_t SteadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::chrono::steady_clock::time_point SteadyTime(int64_t micros) {
  return std::chrono::steady_clock::time_point(std::chrono::microseconds(micros));
}

int64_t Micros(double seconds) { return static_cast<int64_t>(seconds * 1e6); }

spdlog::level::level_enum SpdlogLevel(AlertLevel level) {
  switch (level) {
    case AlertLevel::kDebug:
      return spdlog::level::debug;
    case AlertLevel::kInfo:
      return spdlog::level::info;
    case AlertLevel::kWarning:
      return spdlog::level::warn;
    case AlertLevel::kError:
      return spdlog::level::err;
    case AlertLevel::kCritical:
      return spdlog::level::critical;
  }
  return spdlog::level::err;
}

std::optional<AlertLevel> FromSpdlog(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::debug:
      return AlertLevel::kDebug;
    case spdlog::level::info:
      return AlertLevel::kInfo;
    case spdlog::level::warn:
      return AlertLevel::kWarning;
    case spdlog::level::err:
      return AlertLevel::kError;
    case spdlog::level::critical:
      return AlertLevel::kCritical;
    default:
      return std::nullopt;  // trace, off
  }
}

std::optional<AlertLevel> ParseAlertLevel(std::string_view name) {
  if (name == "DEBUG") return AlertLevel::kDebug;
  if (name == "INFO") return AlertLevel::kInfo;
  if (name == "WARNING") return AlertLevel::kWarning;
  if (name == "ERROR") return AlertLevel::kError;
  if (name == "CRITICAL") return AlertLevel::kCritical;
  return std::nullopt;
}

}  // namespace

struct SlackAlerter::Shared {
  std::mutex mutex;
  std::condition_variable wake;
  AlertBuffer buffer;
  /// Shutdown() was called: post everything now, until `deadline_us`.
  bool flushing = false;
  int64_t deadline_us = 0;
  Counts counts;
};

namespace {

/// Copies records into the buffer; nothing else happens on the logging thread.
class AlertSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  explicit AlertSink(std::shared_ptr<SlackAlerter::Shared> shared) : shared_(std::move(shared)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    if (t_sending_alerts || InForkedChild()) return;
    std::optional<AlertLevel> level = FromSpdlog(message.level);
    if (!level) return;
    AlertRecord record{.level = *level,
                       .message = std::string(message.payload.data(), message.payload.size())};
    if (!message.source.empty()) {
      record.file = message.source.filename;
      record.line = message.source.line;
      if (message.source.funcname != nullptr) record.function = message.source.funcname;
    }
    {
      std::lock_guard lock(shared_->mutex);
      if (shared_->flushing) return;  // Shut down: the sender is gone or about to be.
      if (!shared_->buffer.Push(std::move(record), SteadyMicros())) ++shared_->counts.dropped;
    }
    shared_->wake.notify_one();
  }
  // Posting is the sender's business: a flush of the logger must never wait for the network.
  void flush_() override {}

 private:
  std::shared_ptr<SlackAlerter::Shared> shared_;
};

}  // namespace

SlackAlerter::SlackAlerter(SlackAlerterOptions options)
    : options_(std::move(options)),
      shared_(std::make_shared<Shared>()),
      bucket_(options_.posts_per_second, options_.burst) {
  SenderForkGuard();  // Registers the fork handlers before the sender thread starts.
  shared_->buffer = AlertBuffer(options_.buffer);
  const SecretMask& mask = SecretMask::Global();
  AlertContext& context = options_.context;
  for (std::string* name : {&context.sync_name, &context.source_name, &context.source_stream,
                            &context.destination_name}) {
    *name = mask.Redact(*name);
  }
  sink_ = std::make_shared<AlertSink>(shared_);
  sink_->set_level(SpdlogLevel(options_.threshold));
  sender_ = std::thread([this] { SendLoop(); });
}

SlackAlerter::~SlackAlerter() { Shutdown(); }

void SlackAlerter::Shutdown() {
  if (InForkedChild()) {
    // The sender thread was not copied into this process: nothing to wait for.
    if (sender_.joinable()) sender_.detach();
    return;
  }
  {
    std::lock_guard lock(shared_->mutex);
    if (!shared_->flushing) {
      shared_->flushing = true;
      shared_->deadline_us = SteadyMicros() + Micros(options_.flush_s);
    }
  }
  shared_->wake.notify_all();
  if (sender_.joinable()) sender_.join();
}

SlackAlerter::Counts SlackAlerter::counts() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->counts;
}

bool SlackAlerter::WaitUntil(std::unique_lock<std::mutex>& lock, int64_t until_us) {
  while (true) {
    if (shared_->flushing && until_us > shared_->deadline_us) return false;
    if (SteadyMicros() >= until_us) return true;
    shared_->wake.wait_until(lock, SteadyTime(until_us));
  }
}

SlackAlerter::Delivery SlackAlerter::Deliver(std::unique_lock<std::mutex>& lock,
                                             const std::string& payload) {
  int failures = 0;
  int rate_limited = 0;
  while (true) {
    while (true) {
      double wait = bucket_.WaitSeconds(SteadyMicros());
      if (wait <= 0) break;
      if (!WaitUntil(lock, SteadyMicros() + Micros(wait))) return Delivery::kOutOfTime;
    }
    int64_t now = SteadyMicros();
    double timeout = options_.post_timeout_s;
    if (shared_->flushing) {
      timeout = std::min(timeout, static_cast<double>(shared_->deadline_us - now) / 1e6);
    }
    if (timeout < 0.05) return Delivery::kOutOfTime;
    bucket_.Take(now);
    lock.unlock();
    std::unique_lock fork_guard(SenderForkGuard());
    AlertPostOutcome outcome = options_.poster(payload, timeout);
    double pause = 0;
    if (outcome.status == 429) {
      pause = std::clamp(outcome.retry_after_s.value_or(1.0), 0.0, options_.retry_after_max_s);
      spdlog::warn("Slack is rate limiting the alerts: next post in {:.1f} s", pause);
    } else if (outcome.status != 0 && outcome.status < 500 && !outcome.ok()) {
      spdlog::warn("Slack refused an alert, which is dropped: {}", outcome.error);
    } else if (!outcome.ok()) {
      spdlog::warn("Slack alert not sent (attempt {} of {}): {}", failures + 1, options_.attempts,
                   outcome.error);
    }
    fork_guard.unlock();
    lock.lock();
    if (outcome.ok()) return Delivery::kPosted;
    if (outcome.status == 429) {
      bucket_.PauseUntil(SteadyMicros() + Micros(pause));
      if (++rate_limited > 5) return Delivery::kGivenUp;
      continue;
    }
    // Slack refused this payload (400 invalid_payload, 404 no_service, ...): again will not help.
    if (outcome.status != 0 && outcome.status < 500) return Delivery::kGivenUp;
    if (++failures >= options_.attempts) return Delivery::kGivenUp;
    double backoff = options_.backoff_s * std::pow(2.0, failures - 1);
    if (!WaitUntil(lock, SteadyMicros() + Micros(backoff))) return Delivery::kOutOfTime;
  }
}

void SlackAlerter::SendLoop() {
  t_sending_alerts = true;
  std::unique_lock lock(shared_->mutex);
  while (true) {
    int64_t now = SteadyMicros();
    bool flushing = shared_->flushing;
    if (flushing && now >= shared_->deadline_us) break;
    std::optional<std::vector<AlertEntry>> batch = shared_->buffer.TakeDue(now, flushing);
    if (!batch) {
      if (flushing && shared_->buffer.empty()) break;
      std::optional<int64_t> next = shared_->buffer.NextDueUs();
      if (flushing) next = std::min(next.value_or(shared_->deadline_us), shared_->deadline_us);
      if (next) {
        shared_->wake.wait_until(lock, SteadyTime(*next));
      } else {
        shared_->wake.wait(lock);
      }
      continue;
    }
    int64_t dropped = shared_->buffer.TakeDropped();
    for (AlertEntry& entry : *batch) {
      entry.record.message = SecretMask::Global().Redact(entry.record.message);
    }
    std::string payload = SlackPayload(FormatSlackText(options_.context, *batch, dropped));
    Delivery delivery = Deliver(lock, payload);
    if (delivery == Delivery::kPosted) {
      ++shared_->counts.posted;
    } else if (delivery == Delivery::kGivenUp) {
      ++shared_->counts.failed;
    } else {
      shared_->buffer.Return(std::move(*batch));  // Counted below as not sent.
      break;
    }
  }
  int64_t left = static_cast<int64_t>(shared_->buffer.size());
  shared_->counts.left_unsent = left;
  lock.unlock();
  if (left > 0) {
    std::lock_guard fork_guard(SenderForkGuard());
    spdlog::warn("{} Slack alert{} not sent: the exit flush ran out of time after {} s", left,
                 left == 1 ? "" : "s", options_.flush_s);
  }
}

AlertPoster MakeWebhookPoster(std::string url) {
  HttpPolicy policy;
  policy.raise_for_status = false;
  policy.retries.total = 0;
  policy.retries.status_forcelist.clear();
  auto session = std::make_shared<HttpSession>(HttpSessionOptions{.policy = policy});
  return [session, url = std::move(url)](const std::string& payload, double timeout_s) {
    HttpRequest request;
    request.method = "POST";
    request.url = url;
    request.headers = {{"Content-Type", "application/json"}};
    request.body = payload;
    request.timeouts = HttpTimeouts{.connect_s = std::min(timeout_s, 2.0), .read_s = timeout_s};
    request.raise_for_status = false;
    request.authenticate = false;
    AlertPostOutcome outcome;
    Result<HttpResponse> response = session->Send(request);
    if (!response) {
      std::string error = response.error().message();
      for (size_t at = error.find(url); at != std::string::npos; at = error.find(url, at)) {
        error.replace(at, url.size(), "<webhook>");
      }
      outcome.error = SecretMask::Global().Redact(error);
      return outcome;
    }
    outcome.status = response->status;
    if (!response->ok()) {
      outcome.error = fmt::format("{}: {}", response->status, BodyExcerpt(response->body, 200));
      if (auto header = response->Header("retry-after")) {
        outcome.retry_after_s = ParseRetryAfter(*header, NowMicros());
      }
    }
    return outcome;
  };
}

RunAlerting::RunAlerting(SlackAlerterOptions options) : alerter_(std::move(options)) {
  AddLogSink(alerter_.sink());
}

RunAlerting::~RunAlerting() {
  // The sink stays on the logger, dropping records from now on: taking it off could race a thread
  // that still logs (a client library's callback).
  alerter_.Shutdown();
}

std::optional<AlertLevel> AlertThreshold(const Value& log_levels) {
  std::optional<AlertLevel> lowest;
  if (!log_levels.is_list()) return lowest;
  for (const Value& item : log_levels.AsList()) {
    if (!item.is_string()) continue;
    std::optional<AlertLevel> level = ParseAlertLevel(item.AsString());
    if (level && (!lowest || *level < *lowest)) lowest = level;
  }
  return lowest;
}

std::unique_ptr<RunAlerting> StartRunAlerting(const Value& config) {
  const Value* alerting = config.Find("alerting");
  if (alerting == nullptr || !alerting->is_map()) return nullptr;
  const Value* url = alerting->FindPath("config.webhook_url");
  OptionReader declared(AlertingSection().field, *alerting);
  const Value* levels = declared.Find("log_levels");
  if (url == nullptr || !url->is_string() || levels == nullptr) return nullptr;
  std::optional<AlertLevel> threshold = AlertThreshold(*levels);
  if (!threshold) return nullptr;
  const std::string& webhook = url->AsString();
  SecretMask::Global().Add(webhook);
  // The path is the secret part: an error quoting it without the host must not show it either.
  if (size_t scheme = webhook.find("://"); scheme != std::string::npos) {
    if (size_t path = webhook.find('/', scheme + 3); path != std::string::npos) {
      SecretMask::Global().Add(webhook.substr(path));
    }
  }
  auto named = [&](std::string_view path) {
    const Value* value = config.FindPath(path);
    return value != nullptr && value->is_string() ? value->AsString() : std::string();
  };
  SlackAlerterOptions options;
  options.context = {.sync_name = named("name"),
                     .source_name = named("source.name"),
                     .source_stream = named("source.stream"),
                     .destination_name = named("destination.name")};
  options.threshold = *threshold;
  options.poster = MakeWebhookPoster(webhook);
  return std::make_unique<RunAlerting>(std::move(options));
}

}  // namespace bizon
