// ParallelFor: a bounded fan-out for work items that block on the network (Notion's page
// fetches, the BigQuery Storage Write destinations' streams). Threads are made per call and
// joined before it returns, so nothing outlives the caller's references.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace bizon {

/// Runs fn(0) ... fn(count - 1) on at most `workers` threads (at least 1), each thread taking the
/// next index until none is left. With one worker, or one item, everything runs on the calling
/// thread. fn must not throw; results go through the caller's own per-index slots.
void ParallelFor(size_t count, int64_t workers, const std::function<void(size_t)>& fn);

}  // namespace bizon
