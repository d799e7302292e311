#include "alerting/alert_buffer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>

namespace bizon {

std::string_view ToString(AlertLevel level) {
  switch (level) {
    case AlertLevel::kDebug:
      return "DEBUG";
    case AlertLevel::kInfo:
      return "INFO";
    case AlertLevel::kWarning:
      return "WARNING";
    case AlertLevel::kError:
      return "ERROR";
    case AlertLevel::kCritical:
      return "CRITICAL";
  }
  return "ERROR";
}

std::string AlertRecord::Key() const {
  // The message last: it is the only part that can hold the separator.
  return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}", ToString(level), file, line, function, message);
}

AlertBuffer::AlertBuffer(AlertBufferOptions options) : options_(options) {}

bool AlertBuffer::Push(AlertRecord record, int64_t now_us) {
  std::string key = record.Key();
  for (AlertEntry& entry : waiting_) {
    if (entry.key == key) {
      ++entry.count;
      return true;
    }
  }
  auto window_us = static_cast<int64_t>(options_.dedup_window_s * 1e6);
  if (auto recent = recent_.find(key);
      recent != recent_.end() && now_us - recent->second.posted_us < window_us) {
    if (recent->second.held) {
      ++recent->second.held->count;
      return true;
    }
    if (size() >= options_.capacity) {
      ++dropped_;
      return false;
    }
    recent->second.held = AlertEntry{.record = std::move(record),
                                     .key = key,
                                     .count = 1,
                                     .repeated = true,
                                     .first_seen_us = now_us};
    ++held_count_;
    return true;
  }
  if (size() >= options_.capacity) {
    ++dropped_;
    return false;
  }
  waiting_.push_back(
      AlertEntry{.record = std::move(record), .key = std::move(key), .first_seen_us = now_us});
  return true;
}

void AlertBuffer::ReleaseHeld(int64_t now_us, bool all) {
  auto window_us = static_cast<int64_t>(options_.dedup_window_s * 1e6);
  for (auto& item : recent_) {
    Recent& recent = item.second;
    if (!recent.held || (!all && now_us - recent.posted_us < window_us)) continue;
    waiting_.push_back(std::move(*recent.held));
    recent.held.reset();
    --held_count_;
  }
}

void AlertBuffer::Forget(int64_t now_us) {
  auto window_us = static_cast<int64_t>(options_.dedup_window_s * 1e6);
  std::erase_if(recent_, [&](const auto& item) {
    return !item.second.held && now_us - item.second.posted_us >= window_us;
  });
}

std::optional<std::vector<AlertEntry>> AlertBuffer::TakeDue(int64_t now_us, bool flushing) {
  ReleaseHeld(now_us, flushing);
  Forget(now_us);
  if (waiting_.empty()) return std::nullopt;
  auto gather_us = static_cast<int64_t>(options_.gather_s * 1e6);
  if (!flushing && now_us - waiting_.front().first_seen_us < gather_us) return std::nullopt;
  size_t taken = std::min(options_.batch_max, waiting_.size());
  auto end = waiting_.begin() + static_cast<std::ptrdiff_t>(taken);
  std::vector<AlertEntry> batch(std::make_move_iterator(waiting_.begin()),
                                std::make_move_iterator(end));
  waiting_.erase(waiting_.begin(), end);
  for (const AlertEntry& entry : batch) recent_[entry.key].posted_us = now_us;
  return batch;
}

void AlertBuffer::Return(std::vector<AlertEntry> batch) {
  waiting_.insert(waiting_.begin(), std::make_move_iterator(batch.begin()),
                  std::make_move_iterator(batch.end()));
}

std::optional<int64_t> AlertBuffer::NextDueUs() const {
  std::optional<int64_t> next;
  auto take = [&](int64_t at) { next = next ? std::min(*next, at) : at; };
  if (!waiting_.empty()) {
    take(waiting_.front().first_seen_us + static_cast<int64_t>(options_.gather_s * 1e6));
  }
  for (const auto& item : recent_) {
    const Recent& recent = item.second;
    if (recent.held) take(recent.posted_us + static_cast<int64_t>(options_.dedup_window_s * 1e6));
  }
  return next;
}

int64_t AlertBuffer::TakeDropped() { return std::exchange(dropped_, 0); }

TokenBucket::TokenBucket(double per_second, double burst)
    : per_second_(per_second), burst_(burst), tokens_(burst) {}

void TokenBucket::Refill(int64_t now_us) {
  if (updated_us_ >= 0 && now_us > updated_us_) {
    tokens_ =
        std::min(burst_, tokens_ + static_cast<double>(now_us - updated_us_) / 1e6 * per_second_);
  }
  if (now_us > updated_us_) updated_us_ = now_us;
}

double TokenBucket::WaitSeconds(int64_t now_us) {
  if (now_us < paused_until_us_) return static_cast<double>(paused_until_us_ - now_us) / 1e6;
  Refill(now_us);
  if (tokens_ >= 1) return 0;
  return (1 - tokens_) / per_second_;
}

void TokenBucket::Take(int64_t now_us) {
  Refill(now_us);
  tokens_ = std::max(0.0, tokens_ - 1);
}

void TokenBucket::PauseUntil(int64_t until_us) {
  paused_until_us_ = std::max(paused_until_us_, until_us);
}

}  // namespace bizon
