#include "connectors/sources/rest_api/resources_source.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "common/parallel.h"

namespace bizon {
namespace {

// Tasks a round takes per worker: enough to keep the workers busy between two iterations.
constexpr size_t kTasksPerWorker = 4;

Status StateError(std::string_view detail) {
  return Status(StatusCode::kFailedPrecondition,
                fmt::format("the recorded position of this rest_api source does not match its "
                            "resources ({}); reset the stream to read it again from the start",
                            detail),
                FailureClass::kSource);
}

}  // namespace

ResourcesSource::ResourcesSource(std::vector<ResourceSpec> resources,
                                 std::vector<std::shared_ptr<HttpSession>> sessions)
    : resources_(std::move(resources)) {
  for (size_t i = 0; i < resources_.size(); ++i) {
    readers_.push_back(std::make_unique<ResourcePages>(resources_, i, std::move(sessions[i])));
  }
}

Result<SourceIteration> ResourcesSource::Get(const Value& pagination) {
  BIZON_RETURN_IF_ERROR(OpenWindows(Value::EmptyMap()));
  return Round(pagination);
}

Result<SourceIteration> ResourcesSource::GetRecordsAfter(const IncrementalState& state,
                                                         const Value& pagination) {
  BIZON_RETURN_IF_ERROR(OpenWindows(state.state));
  return Round(pagination);
}

Status ResourcesSource::OpenWindows(const Value& stored) {
  if (windows_open_) return Status::Ok();
  windows_open_ = true;
  const Value* by_resource = stored.Find("resources");
  for (const ResourceSpec& resource : resources_) {
    const Value* own = by_resource != nullptr ? by_resource->Find(resource.name) : nullptr;
    stored_.push_back(own != nullptr ? *own : Value());
    if (!resource.endpoint.incremental) {
      windows_.emplace_back();
      continue;
    }
    auto window =
        CursorWindow::Make(*resource.endpoint.incremental, CursorState::FromValue(stored_.back()));
    if (!window) {
      return window.error().WithContext(fmt::format("rest_api resource '{}'", resource.name));
    }
    if (window->start()) {
      spdlog::info("rest_api resource '{}': reading from {} = {}", resource.name,
                   resource.endpoint.incremental->cursor_field, window->start()->ToJson());
    }
    windows_.push_back(std::move(*window));
  }
  return Status::Ok();
}

Result<ResourcesSource::Progress> ResourcesSource::Decode(const Value& pagination) const {
  Progress progress;
  progress.cursors.resize(resources_.size());
  const Value* queue = pagination.Find("queue");
  if (queue == nullptr) {
    for (size_t i = 0; i < resources_.size(); ++i) {
      if (!resources_[i].parent) progress.queue.push_back({.resource = i});
    }
    return progress;
  }
  if (!queue->is_list()) return Fail(StateError("no task list"));
  auto index_of = [&](const std::string& name) -> Result<size_t> {
    for (size_t i = 0; i < resources_.size(); ++i) {
      if (resources_[i].name == name) return i;
    }
    return Fail(StateError(fmt::format("no resource '{}'", name)));
  };
  for (const Value& task : queue->AsList()) {
    BIZON_ASSIGN_OR_RETURN(size_t resource, index_of(task.GetString("r")));
    const Value* parent = task.Find("parent");
    const Value* page = task.Find("page");
    progress.queue.push_back({.resource = resource,
                              .parent = parent != nullptr ? *parent : Value::EmptyMap(),
                              .page = page != nullptr ? *page : Value::EmptyMap()});
  }
  if (const Value* cursors = pagination.Find("cursors"); cursors != nullptr && cursors->is_map()) {
    for (const auto& [name, state] : cursors->AsMap()) {
      BIZON_ASSIGN_OR_RETURN(size_t resource, index_of(name));
      progress.cursors[resource] = CursorState::FromValue(state);
    }
  }
  return progress;
}

Value ResourcesSource::Encode(const Progress& progress) const {
  Value::List queue;
  queue.reserve(progress.queue.size());
  for (const ResourceTask& task : progress.queue) {
    Value entry(Value::Map{{"r", resources_[task.resource].name}});
    if (resources_[task.resource].parent) entry.Set("parent", task.parent);
    entry.Set("page", task.page);
    queue.push_back(std::move(entry));
  }
  Value cursors = Value::EmptyMap();
  for (size_t i = 0; i < resources_.size(); ++i) {
    if (!progress.cursors[i].empty())
      cursors.Set(resources_[i].name, progress.cursors[i].ToValue());
  }
  return Value(Value::Map{{"queue", Value(std::move(queue))}, {"cursors", std::move(cursors)}});
}

std::optional<Value> ResourcesSource::NextState(const Progress& progress) const {
  Value states = Value::EmptyMap();
  bool any = false;
  for (size_t i = 0; i < resources_.size(); ++i) {
    const std::optional<IncrementalSpec>& incremental = resources_[i].endpoint.incremental;
    if (!incremental) continue;
    any = true;
    if (incremental->end_value) {
      // A backfill range leaves the stored state as it was.
      if (!stored_[i].is_null()) states.Set(resources_[i].name, stored_[i]);
      continue;
    }
    CursorState state = windows_[i]->stored();
    state.Merge(progress.cursors[i], incremental->lag);
    if (!state.empty()) states.Set(resources_[i].name, state.ToValue());
  }
  if (!any) return std::nullopt;
  return Value(Value::Map{{"resources", std::move(states)}});
}

Result<SourceIteration> ResourcesSource::Round(const Value& pagination) {
  BIZON_ASSIGN_OR_RETURN(Progress progress, Decode(pagination));
  SourceIteration iteration;
  if (progress.queue.empty()) {
    iteration.next_pagination = Value::EmptyMap();
    iteration.next_state = NextState(progress);
    return iteration;
  }
  size_t resource = progress.queue.front().resource;
  size_t workers = static_cast<size_t>(resources_[resource].parallel);
  size_t size = 0;
  while (size < progress.queue.size() && size < workers * kTasksPerWorker &&
         progress.queue[size].resource == resource) {
    ++size;
  }
  std::vector<Result<TaskOutcome>> outcomes(size, Fail(InternalError("task not run")));
  const CursorWindow* window = windows_[resource] ? &*windows_[resource] : nullptr;
  ParallelFor(size, static_cast<int64_t>(workers),
              [&](size_t i) { outcomes[i] = readers_[resource]->Read(progress.queue[i], window); });

  std::vector<ResourceTask> queue;
  for (size_t i = 0; i < size; ++i) {
    if (!outcomes[i]) return Fail(outcomes[i].error());
    TaskOutcome& outcome = *outcomes[i];
    iteration.records.AppendRange(outcome.records, 0, outcome.records.size());
    if (const std::optional<IncrementalSpec>& incremental =
            resources_[resource].endpoint.incremental) {
      progress.cursors[resource].Merge(outcome.cursors, incremental->lag);
    }
    for (ResourceTask& child : outcome.children) queue.push_back(std::move(child));
    if (outcome.next_page) {
      ResourceTask next = std::move(progress.queue[i]);
      next.page = std::move(*outcome.next_page);
      queue.push_back(std::move(next));
    }
  }
  std::move(progress.queue.begin() + static_cast<std::ptrdiff_t>(size), progress.queue.end(),
            std::back_inserter(queue));
  progress.queue = std::move(queue);
  iteration.next_state = NextState(progress);
  iteration.next_pagination = progress.queue.empty() ? Value::EmptyMap() : Encode(progress);
  return iteration;
}

}  // namespace bizon
