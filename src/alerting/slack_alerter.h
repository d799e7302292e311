// SlackAlerter: log records at the alert levels, posted to a Slack incoming webhook off the
// logging path.
//
// The sink() given to spdlog only copies the record into a bounded AlertBuffer and wakes the
// sender thread; it never blocks on the network, so a slow or hanging webhook cannot slow the
// pipeline. The sender gathers records for a moment (one failure usually logs two or three
// records at once), folds identical ones into one alert with a count, paces the posts with a
// token bucket, honours a 429's Retry-After, and retries 5xx and network failures a few times.
// A failed post is logged as a warning from the sender thread, and records logged on that thread
// are never alerted, so a failing webhook cannot feed itself.
//
// Lifecycle: the constructor starts the sender thread; Shutdown() (or the destructor) posts what
// is waiting, for at most `flush_s`, then stops it. In a child made by fork() (the process runner's
// producer) the sink drops everything: the sender thread exists only in the parent, which reports
// the child's failure itself; fork() waits for a post in flight, so the child inherits no lock
// held inside libcurl or a log sink.
//
// Thread-safety: the sink may be called from any number of threads at once.
#pragma once

#include <spdlog/sinks/sink.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "alerting/alert_buffer.h"
#include "alerting/slack_message.h"
#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

/// What one post attempt got back.
struct AlertPostOutcome {
  /// HTTP status; 0 when no answer came (connection refused, timeout).
  int status = 0;
  /// For the log when it failed: "500: rollup_error", "timed out after 3 s". Never the URL.
  std::string error;
  /// A 429's Retry-After, in seconds.
  std::optional<double> retry_after_s;

  bool ok() const { return status >= 200 && status < 300; }
};

/// Sends one JSON payload, giving up after `timeout_s`.
using AlertPoster = std::function<AlertPostOutcome(const std::string& payload, double timeout_s)>;

struct SlackAlerterOptions {
  AlertContext context;
  /// Records at this level or above are alerted.
  AlertLevel threshold = AlertLevel::kError;
  AlertBufferOptions buffer;
  /// Slack's pace: about one message per second, short bursts allowed.
  double posts_per_second = 1;
  double burst = 3;
  /// The longest one post may take (connect and answer).
  double post_timeout_s = 3;
  /// Tries per batch for 5xx answers and network failures, with `backoff_s` doubling between.
  int attempts = 3;
  double backoff_s = 1;
  /// A Retry-After longer than this is cut to it.
  double retry_after_max_s = 30;
  /// How long Shutdown() may take at most, posting what is waiting.
  double flush_s = 5;
  AlertPoster poster;
};

class SlackAlerter {
 public:
  explicit SlackAlerter(SlackAlerterOptions options);
  ~SlackAlerter();
  SlackAlerter(const SlackAlerter&) = delete;
  SlackAlerter& operator=(const SlackAlerter&) = delete;

  /// The spdlog sink, at the threshold level. It outlives the alerter safely (it drops records
  /// once the alerter is shut down).
  std::shared_ptr<spdlog::sinks::sink> sink() const { return sink_; }

  /// Posts what is waiting, within `flush_s`, and stops the sender. Later calls do nothing.
  void Shutdown();

  struct Counts {
    int64_t posted = 0;       // Posts Slack accepted.
    int64_t failed = 0;       // Batches given up on.
    int64_t dropped = 0;      // Records dropped because the buffer was full.
    int64_t left_unsent = 0;  // Alerts still waiting when the flush ran out of time.
  };
  Counts counts() const;

  struct Shared;

 private:
  void SendLoop();
  enum class Delivery { kPosted, kGivenUp, kOutOfTime };
  /// Posts one batch, with its pacing and retries: posted, given up (refused, or out of tries),
  /// or stopped by the flush deadline.
  Delivery Deliver(std::unique_lock<std::mutex>& lock, const std::string& payload);
  /// Waits until `until_us`; false (at once) when the flush deadline comes first.
  bool WaitUntil(std::unique_lock<std::mutex>& lock, int64_t until_us);

  SlackAlerterOptions options_;
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<spdlog::sinks::sink> sink_;
  TokenBucket bucket_;
  std::thread sender_;
};

/// The poster for a webhook URL, over HttpSession: no retries of its own (the alerter decides),
/// no authentication, errors that never repeat the URL.
AlertPoster MakeWebhookPoster(std::string url);

/// Slack alerting for one run, attached to the process logger by the constructor; the destructor
/// flushes (bounded by `flush_s`), after which the sink drops every record.
class RunAlerting {
 public:
  explicit RunAlerting(SlackAlerterOptions options);
  ~RunAlerting();
  RunAlerting(const RunAlerting&) = delete;
  RunAlerting& operator=(const RunAlerting&) = delete;

  SlackAlerter& alerter() { return alerter_; }

 private:
  SlackAlerter alerter_;
};

/// Starts alerting from a validated pipeline config: null when it has no `alerting` block or no
/// level. The webhook URL is registered with the SecretMask. The context names come from `name`,
/// `source.name`, `source.stream` and `destination.name`.
std::unique_ptr<RunAlerting> StartRunAlerting(const Value& config);

/// The lowest of `log_levels` (the original installs one sink per entry, each a minimum level,
/// so a record above two of them was posted twice); nullopt for an empty list.
std::optional<AlertLevel> AlertThreshold(const Value& log_levels);

}  // namespace bizon
