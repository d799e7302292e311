// What the consumer has made durable, handed back to the producer so that its source can
// acknowledge it (a kafka source commits its group offsets): the next_pagination recorded with
// the last destination cursor. The consumer posts after each cursor; the producer takes the latest
// before its next fetch and calls Source::Commit() with it, so the source is only ever used from
// the producer's thread. A source is never acknowledged past what a cursor recorded.
#pragma once

#include <mutex>
#include <optional>
#include <utility>

#include "bizon/value.h"

namespace bizon {

class Acknowledgements {
 public:
  /// Replaces what is pending: a later cursor covers everything an earlier one did.
  void Post(const Value& recorded_pagination) {
    std::lock_guard lock(mutex_);
    pending_ = recorded_pagination;
  }

  /// The latest posted pagination not taken yet.
  std::optional<Value> Take() {
    std::lock_guard lock(mutex_);
    return std::exchange(pending_, std::nullopt);
  }

 private:
  std::mutex mutex_;
  std::optional<Value> pending_;
};

}  // namespace bizon
