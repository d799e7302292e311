// ResourcesSource: the rest_api source in its `resources` form, every resource read in one run.
//
// The work is a queue of tasks (rest_resources.h, resource_pages.h): at first one per top-level
// resource, in declared order. Each Get() runs one round: the first task and the tasks right
// behind it of the same resource, up to 4 × its `parallel`, fetched on `parallel` threads (a
// top-level resource has one task at a time, so its pages go one by one; a child has one per
// parent record). Each task is replaced, in place, by the child tasks of the records it kept,
// then its own next page. The round's records, in task order, make the iteration.
//
// The pagination the engine records with each iteration is the queue itself plus each
// resource's running incremental state:
//
//   {"queue": [{"r": "issues", "page": {"page": 3}},
//              {"r": "comments", "parent": {"number": 41}, "page": {}}, ...],
//    "cursors": {"issues": {"cursor": "...", "seen": [...]}}}
//
// so a resumed run picks up every resource where it stopped, and a child at the parent record
// where it stopped: exactly once with a destination that resumes at its cursor. The iteration's
// next_state is {"resources": {name: state}} (incremental_cursor.h), kept for the next run.
//
// Thread-compatible: the engine calls Get() from one thread; a round's threads end within it.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "bizon/source.h"
#include "connectors/sources/rest_api/resource_pages.h"

namespace bizon {

class ResourcesSource final : public Source {
 public:
  /// `sessions[i]` serves `resources[i]`.
  ResourcesSource(std::vector<ResourceSpec> resources,
                  std::vector<std::shared_ptr<HttpSession>> sessions);

  Result<SourceIteration> Get(const Value& pagination) override;
  Result<SourceIteration> GetRecordsAfter(const IncrementalState& state,
                                          const Value& pagination) override;

 private:
  struct Progress {
    std::vector<ResourceTask> queue;
    std::vector<CursorState> cursors;  // Per resource: this run's kept records.
  };

  Status OpenWindows(const Value& stored);
  Result<SourceIteration> Round(const Value& pagination);
  Result<Progress> Decode(const Value& pagination) const;
  Value Encode(const Progress& progress) const;
  /// {"resources": {name: state}} for the resources with an incremental block.
  std::optional<Value> NextState(const Progress& progress) const;

  std::vector<ResourceSpec> resources_;
  std::vector<std::unique_ptr<ResourcePages>> readers_;
  bool windows_open_ = false;
  std::vector<std::optional<CursorWindow>> windows_;
  std::vector<Value> stored_;  // Per resource: the previous run's state, as stored.
};

}  // namespace bizon
