#include "common/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace bizon {

void ParallelFor(size_t count, int64_t workers, const std::function<void(size_t)>& fn) {
  size_t threads = std::min<size_t>(count, static_cast<size_t>(std::max<int64_t>(1, workers)));
  if (threads <= 1) {
    for (size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < count; i = next++) fn(i);
    });
  }
  for (std::thread& thread : pool) thread.join();
}

}  // namespace bizon
