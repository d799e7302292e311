// AlertBuffer: the alerts waiting to be posted, de-duplicated and gathered into batches; and
// TokenBucket, the pace of the posts.
//
// Both are plain data structures driven by explicit times (microseconds on a monotonic clock), so
// the tests step time by hand. They are not thread-safe: SlackAlerter holds its own mutex around
// the buffer and uses the bucket from its sender thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bizon {

/// The levels an alert can carry, in the original's names (DEBUG … CRITICAL); TRACE records are
/// never alerted.
enum class AlertLevel { kDebug, kInfo, kWarning, kError, kCritical };
std::string_view ToString(AlertLevel level);

/// One log record, as the logging sink saw it.
struct AlertRecord {
  AlertLevel level = AlertLevel::kError;
  std::string message;
  /// Where the record was logged; empty (shown as N/A) when the call did not say.
  std::string file;
  int line = 0;
  std::string function;

  /// Records with the same key are the same alert: same level, place and message.
  std::string Key() const;
};

/// A record to post, with how many identical records it stands for.
struct AlertEntry {
  AlertRecord record;
  /// record.Key(), computed once.
  std::string key;
  /// Identical records folded into this one (1: just this one).
  int64_t count = 1;
  /// True when an identical alert was posted within the window before: `count` then counts the
  /// records since that post.
  bool repeated = false;
  int64_t first_seen_us = 0;
};

struct AlertBufferOptions {
  /// Distinct alerts held at once (waiting or held back as repeats); more are dropped and counted.
  size_t capacity = 256;
  /// A batch waits this long after its first alert for more, so one failure that logs several
  /// records (the error, then the run's status) makes one post.
  double gather_s = 1.0;
  /// An alert identical to one posted less than this long ago is not posted again: it is counted
  /// and posted once the window has passed (or at exit), as "N more since".
  double dedup_window_s = 60;
  /// Alerts in one post at most.
  size_t batch_max = 5;
};

class AlertBuffer {
 public:
  explicit AlertBuffer(AlertBufferOptions options = {});

  /// Adds a record seen at `now_us`. False when it was dropped because the buffer is full; a
  /// record identical to one already waiting is folded into it and never dropped.
  bool Push(AlertRecord record, int64_t now_us);

  /// The next batch to post at `now_us`, if one is due. `flushing` (the process is exiting) makes
  /// everything due at once, held-back repeats included.
  std::optional<std::vector<AlertEntry>> TakeDue(int64_t now_us, bool flushing);

  /// Puts a batch that could not be posted back at the front, to try again.
  void Return(std::vector<AlertEntry> batch);

  /// When the next batch becomes due without new records; nullopt when nothing is waiting.
  std::optional<int64_t> NextDueUs() const;

  /// Alerts waiting or held back.
  size_t size() const { return waiting_.size() + held_count_; }
  bool empty() const { return size() == 0; }
  /// Records dropped because the buffer was full, since the last call.
  int64_t TakeDropped();

 private:
  struct Recent {
    int64_t posted_us = 0;
    std::optional<AlertEntry> held;
  };

  void ReleaseHeld(int64_t now_us, bool all);
  void Forget(int64_t now_us);

  AlertBufferOptions options_;
  std::vector<AlertEntry> waiting_;
  std::map<std::string, Recent> recent_;
  size_t held_count_ = 0;
  int64_t dropped_ = 0;
};

/// Posts per second with a burst allowance: Slack accepts about one message per second per
/// webhook, with short bursts above it.
class TokenBucket {
 public:
  TokenBucket(double per_second, double burst);

  /// Seconds to wait at `now_us` before a post may go (0: now).
  double WaitSeconds(int64_t now_us);
  /// Spends one post at `now_us`; call when WaitSeconds() is 0.
  void Take(int64_t now_us);
  /// No post before `until_us` (a 429's Retry-After).
  void PauseUntil(int64_t until_us);

 private:
  void Refill(int64_t now_us);

  double per_second_;
  double burst_;
  double tokens_;
  int64_t updated_us_ = -1;
  int64_t paused_until_us_ = 0;
};

}  // namespace bizon
