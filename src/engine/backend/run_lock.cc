#include "engine/backend/run_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

namespace bizon {

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);
}

Result<RunLock> RunLock::Acquire(const std::string& state_path, const StreamKey& key) {
  size_t hash =
      std::hash<std::string>{}(key.name + '\x1f' + key.source_name + '\x1f' + key.stream_name);
  RunLock lock;
  lock.path_ = fmt::format("{}.{:016x}.lock", state_path, hash);
  lock.fd_ = ::open(lock.path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock.fd_ < 0) {
    return Fail(
        Status(StatusCode::kFailedPrecondition,
               fmt::format("cannot create the run lock {}: {}", lock.path_, std::strerror(errno)),
               FailureClass::kBackend));
  }
  if (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
    return Fail(Status(StatusCode::kFailedPrecondition,
                       fmt::format("another run of pipeline '{}' ({}.{}) is in progress (lock {} "
                                   "is held); wait for it to finish",
                                   key.name, key.source_name, key.stream_name, lock.path_),
                       FailureClass::kBackend));
  }
  return lock;
}

}  // namespace bizon
