#include "engine/commit_loop.h"

#include <utility>

namespace bizon {

CommitLoop::CommitLoop(Backend& backend, Destination& destination, const PipelineSettings& settings,
                       const JobPlan& plan, Hooks hooks)
    : backend_(backend),
      destination_(destination),
      settings_(settings),
      plan_(plan),
      hooks_(std::move(hooks)),
      state_(plan.destination_state) {}

Status CommitLoop::Commit(const Covered& covered, const std::function<Result<Value>()>& write) {
  Result<Value> state = write();
  if (!state) return state.error().WithFailureClass(FailureClass::kDestination);
  state_ = std::move(*state);
  return Record(covered);
}

Status CommitLoop::CommitEmpty(const Covered& covered) { return Record(covered); }

Status CommitLoop::Record(const Covered& covered) {
  const Value& pagination = covered.pagination;
  bool exhausted = covered.source_exhausted || pagination.is_null() ||
                   (pagination.is_map() && pagination.AsMap().empty());
  DestinationCursor cursor{
      .id = "",
      .job_id = plan_.job.id,
      .key = settings_.key,
      .destination_name = settings_.destination_name,
      .from_source_iteration = covered.from_iteration,
      .to_source_iteration = covered.to_iteration,
      .rows_written = covered.rows,
      .success = true,
      .pagination = exhausted ? std::nullopt : std::optional<std::string>(pagination.ToJson()),
      .destination_state =
          state_.is_null() ? std::nullopt : std::optional<std::string>(state_.ToJson()),
      .error_message = std::nullopt,
      .created_at_us = 0};
  Status recorded =
      hooks_.record ? hooks_.record(cursor) : backend_.CreateDestinationCursor(cursor);
  BIZON_RETURN_IF_ERROR(recorded.WithFailureClass(FailureClass::kBackend));
  if (!state_.is_null()) {
    BIZON_RETURN_IF_ERROR(
        destination_.OnCursorRecorded(state_).WithFailureClass(FailureClass::kDestination));
  }
  if (hooks_.recorded) hooks_.recorded(cursor);
  if (hooks_.acknowledge) {
    BIZON_RETURN_IF_ERROR(hooks_.acknowledge(pagination).WithFailureClass(FailureClass::kSource));
  }
  return Status::Ok();
}

}  // namespace bizon
