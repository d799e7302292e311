// An exclusive lock on one pipeline stream for the duration of a run, so two runs of the same
// pipeline cannot both resume or both create its job. The kernel releases it when the process
// dies, so a killed run never leaves it behind.
#pragma once

#include <string>

#include "bizon/backend.h"
#include "bizon/status.h"

namespace bizon {

class RunLock {
 public:
  RunLock() = default;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  RunLock(RunLock&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
    other.fd_ = -1;
  }
  ~RunLock();

  /// Takes the lock beside `state_path` (the backend's file) for `key`, without waiting.
  static Result<RunLock> Acquire(const std::string& state_path, const StreamKey& key);

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace bizon
