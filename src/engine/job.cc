#include "engine/job.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>

#include "engine/backend/original_state.h"

namespace bizon {
namespace {

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

/// True when `owner` names a live process on this host other than ourselves.
bool OwnerIsAlive(const std::string& owner) {
  size_t at = owner.find('@');
  if (at == std::string::npos) return false;
  if (owner.substr(at + 1) != HostName()) return false;  // Another host: cannot tell; see lock.
  pid_t pid = static_cast<pid_t>(std::strtol(owner.substr(0, at).c_str(), nullptr, 10));
  if (pid <= 0 || pid == getpid()) return false;
  return kill(pid, 0) == 0 || errno == EPERM;
}

Status Backendify(Status status) {
  return std::move(status).WithFailureClass(FailureClass::kBackend);
}

}  // namespace

std::string CurrentOwner() { return fmt::format("{}@{}", getpid(), HostName()); }

Status PlanStart(Backend& backend, const PipelineSettings& settings, JobPlan& plan) {
  std::string label = settings.key.source_name + "." + settings.key.stream_name;
  // Where to start: after the last committed destination cursor of a resumed job.
  if (plan.resumed) {
    auto cursor = backend.GetLastDestinationCursor(plan.job.id);
    if (!cursor) return Backendify(cursor.error());
    if (cursor->has_value()) {
      const DestinationCursor& last = **cursor;
      plan.start_iteration = last.to_source_iteration + 1;
      if (!last.pagination) {
        plan.source_exhausted = true;
      } else {
        auto pagination = Value::FromJson(*last.pagination);
        if (!pagination) {
          return Status(StatusCode::kDataLoss,
                        fmt::format("job {}: the stored pagination of iteration {} is not "
                                    "valid JSON",
                                    plan.job.id, last.to_source_iteration),
                        FailureClass::kBackend);
        }
        plan.start_pagination = std::move(*pagination);
      }
      if (last.destination_state) {
        auto state = Value::FromJson(*last.destination_state);
        if (state) plan.destination_state = std::move(*state);
      }
      auto rows = backend.GetWrittenRowCount(plan.job.id);
      if (!rows) return Backendify(rows.error());
      plan.rows_already_written = *rows;
      spdlog::info("Resuming {} from iteration {} ({} rows already written)", label,
                   plan.start_iteration, plan.rows_already_written);
    }
  }

  // The incremental window.
  if (settings.sync_mode == SyncMode::kIncremental) {
    auto last = backend.GetLastSuccessfulStreamJob(settings.key);
    if (!last) return Backendify(last.error());
    if (plan.is_reset) {
      plan.previous_state = "{}";
    } else if (last->has_value()) {
      IncrementalState window;
      window.last_run_us = (*last)->created_at_us;
      window.run_started_at_us = plan.job.created_at_us;
      window.cursor_field = settings.source_config.GetString("cursor_field");
      if ((*last)->incremental_state) {
        plan.previous_state = (*last)->incremental_state;
        auto state = Value::FromJson(*(*last)->incremental_state);
        if (state) window.state = std::move(*state);
      }
      plan.window = std::move(window);
    } else {
      spdlog::info(
          "First incremental run for {}: no previous successful job, fetching "
          "everything",
          label);
    }
  }
  return Status::Ok();
}

namespace {

/// The running job of `key`, if any. Fails when a live process on this host owns it and this
/// process does not hold the run lock (pids are recycled: with the lock, the owner is gone).
/// A job still `started` counts as running: a run stopped between creating its job and marking
/// it running left it, and resuming it (it has no cursor yet) leaves no job behind unfinished.
Result<std::optional<StreamJob>> RunningJob(Backend& backend, const StreamKey& key,
                                            const std::string& label, bool holds_run_lock) {
  auto running = backend.GetRunningStreamJob(key);
  if (running && !*running) running = backend.GetStartedStreamJob(key);
  if (!running) return Fail(Backendify(running.error()));
  if (*running && !holds_run_lock && OwnerIsAlive((*running)->owner)) {
    return Fail(Status(StatusCode::kFailedPrecondition,
                       fmt::format("another run of pipeline '{}' ({}) is in progress, owned by "
                                   "process {}; wait for it to finish or stop it first",
                                   key.name, label, (*running)->owner),
                       FailureClass::kBackend));
  }
  if (*running && !(*running)->owner.empty()) {
    spdlog::warn(
        "Job {} for {} was left running by process {}, which is gone (killed or "
        "crashed); treating it as interrupted",
        (*running)->id, label, (*running)->owner);
  }
  return std::move(*running);
}

struct ResetPlan {
  bool is_reset = false;
  /// The running job is itself a reset that was interrupted.
  bool resuming = false;
  std::optional<StreamReset> pending;
};

Result<ResetPlan> PlanReset(Backend& backend, const PipelineSettings& settings,
                            const std::optional<StreamJob>& running) {
  ResetPlan reset;
  if (running) {
    auto bound = backend.GetStreamResetByJobId(running->id);
    if (!bound) return Fail(Backendify(bound.error()));
    reset.resuming = bound->has_value();
  }
  if (settings.sync_mode != SyncMode::kIncremental) {
    if (settings.reset_requested) {
      spdlog::warn(
          "A reset was requested but sync_mode is {}: there is no incremental state to "
          "reset, ignoring it",
          ToString(settings.sync_mode));
    }
    return reset;
  }
  auto pending = backend.GetPendingStreamReset(settings.key);
  if (!pending) return Fail(Backendify(pending.error()));
  reset.pending = std::move(*pending);
  reset.is_reset = reset.resuming || reset.pending.has_value() || settings.reset_requested;
  return reset;
}

/// The original records no destination state: what it wrote after its last cursor, and whether
/// its staged rows are all there, cannot be checked, and resuming would hand the destination
/// nothing to restore (the file destination would cut the original's rows off). A new job
/// fetches the window again into fresh staging, since nothing staged was published; a stream's
/// source continues from its own position, the original's only one.
Result<bool> LastWrittenByOriginal(Backend& backend, const StreamJob& running,
                                   const std::string& label) {
  auto last = backend.GetLastDestinationCursor(running.id);
  if (!last) return Fail(Backendify(last.error()));
  if (!last->has_value() || (*last)->destination_state != kOriginalCursorState) return false;
  spdlog::info(
      "Job {} for {} was last written by the original bizon, which records no destination "
      "state; starting a new job instead of resuming it",
      running.id, label);
  return true;
}

/// Binds the reset to the job that performs it (once: a resumed reset is bound already).
Status BindReset(Backend& backend, const StreamKey& key, const ResetPlan& reset,
                 const std::string& job_id) {
  auto bound = backend.GetStreamResetByJobId(job_id);
  if (!bound) return Backendify(bound.error());
  if (!bound->has_value()) {
    std::string reset_id;
    if (reset.pending) {
      reset_id = reset.pending->id;
    } else {
      auto created = backend.CreateStreamReset(key);
      if (!created) return Backendify(created.error());
      reset_id = created->id;
    }
    BIZON_RETURN_IF_ERROR(Backendify(backend.ConsumeStreamReset(reset_id, job_id)));
  }
  spdlog::info("Stream reset: re-fetching the full stream, the destination will be replaced");
  return Status::Ok();
}

}  // namespace

Result<JobPlan> InitJob(Backend& backend, const PipelineSettings& settings, Source& source,
                        bool holds_run_lock, bool resume_full_refresh) {
  const StreamKey& key = settings.key;
  std::string label = key.source_name + "." + key.stream_name;
  BIZON_ASSIGN_OR_RETURN(std::optional<StreamJob> running,
                         RunningJob(backend, key, label, holds_run_lock));
  BIZON_ASSIGN_OR_RETURN(ResetPlan reset, PlanReset(backend, settings, running));
  bool force_create = settings.force_ignore_checkpoint || (reset.is_reset && !reset.resuming);
  if (running && !force_create) {
    BIZON_ASSIGN_OR_RETURN(force_create, LastWrittenByOriginal(backend, *running, label));
  }
  JobPlan plan;
  plan.is_reset = reset.is_reset;
  std::string owner = CurrentOwner();
  bool restart_full_refresh = settings.sync_mode == SyncMode::kFullRefresh && !resume_full_refresh;
  if (running && (force_create || restart_full_refresh)) {
    spdlog::info("Cancelling job {} and starting a new one: {}", running->id,
                 settings.sync_mode == SyncMode::kFullRefresh ? "it is a full refresh"
                                                              : "a fresh start was requested");
    BIZON_RETURN_IF_ERROR(Backendify(
        backend.UpdateStreamJobStatus(running->id, JobStatus::kCancelled, std::nullopt)));
    running.reset();
  }
  if (running) {
    plan.job = *running;
    plan.resumed = true;
    BIZON_RETURN_IF_ERROR(Backendify(backend.SetJobOwner(plan.job.id, owner)));
    spdlog::info("Resuming job {} for {}", plan.job.id, label);
  } else {
    std::optional<int64_t> total;
    if (settings.sync_mode != SyncMode::kStream) total = source.TotalRecordsCount();
    auto created = backend.CreateStreamJob(key, ToString(settings.sync_mode), total, owner);
    if (!created) return Fail(Backendify(created.error()));
    plan.job = std::move(*created);
    spdlog::info("Created job {} for {} ({})", plan.job.id, label, ToString(settings.sync_mode));
  }
  if (reset.is_reset) BIZON_RETURN_IF_ERROR(BindReset(backend, key, reset, plan.job.id));
  BIZON_RETURN_IF_ERROR(
      Backendify(backend.UpdateStreamJobStatus(plan.job.id, JobStatus::kRunning, std::nullopt)));
  BIZON_RETURN_IF_ERROR(PlanStart(backend, settings, plan));
  return plan;
}

}  // namespace bizon
