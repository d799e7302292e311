#include "common/fork_guard.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <atomic>

namespace bizon {
namespace {

std::atomic<bool> g_forked_child{false};

std::mutex& Guard() {
  static std::mutex guard;
  return guard;
}

void LockForFork() { Guard().lock(); }
void UnlockInParent() { Guard().unlock(); }
void UnlockInChild() {
  g_forked_child.store(true, std::memory_order_relaxed);
  Guard().unlock();
}

}  // namespace

std::mutex& SenderForkGuard() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Fails only for lack of memory. Without the handlers a fork could catch a sender mid-way.
    int registered = ::pthread_atfork(LockForFork, UnlockInParent, UnlockInChild);
    if (registered != 0) spdlog::warn("cannot watch for fork() ({})", registered);
  });
  return Guard();
}

bool InForkedChild() { return g_forked_child.load(std::memory_order_relaxed); }

}  // namespace bizon
