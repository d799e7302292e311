// Job lifecycle: find, resume or create the job of a run, and decide where it starts.
//
// This is the original's init_job with its recovery rules, plus what it lacked: a job whose owner
// process is gone is recognised as interrupted (never as "someone else is running it"), a live
// owner on this host blocks a second run of the same pipeline, a resumed job whose source was
// already exhausted goes straight to publishing instead of failing, and a running job whose last
// cursor the original bizon wrote (no destination state to restore) is replaced, not resumed.
#pragma once

#include <optional>
#include <string>

#include "bizon/backend.h"
#include "bizon/source.h"
#include "engine/settings.h"

namespace bizon {

struct JobPlan {
  StreamJob job;
  bool resumed = false;
  /// A stream reset: fetch everything with Get() and materialise as a full refresh.
  bool is_reset = false;
  /// Where the producer starts.
  int64_t start_iteration = 0;
  Value start_pagination = Value::EmptyMap();
  /// The resumed job had fetched and written everything: only finalize is left.
  bool source_exhausted = false;
  /// What the destination wrote up to the last committed cursor (null for a fresh start).
  Value destination_state;
  /// Set for incremental runs that have a previous successful run: read that window.
  std::optional<IncrementalState> window;
  /// The next_state of the previous successful run, kept when this run emits none.
  std::optional<std::string> previous_state;
  int64_t rows_already_written = 0;

  /// The mode the destination materialises: a reset is written as a full refresh.
  SyncMode MaterializationMode(SyncMode configured) const {
    return is_reset ? SyncMode::kFullRefresh : configured;
  }
};

/// "pid@host" for the current process.
std::string CurrentOwner();

/// Fills in where `plan.job` starts (its last committed cursor, when `plan.resumed`) and its
/// incremental window (when `plan.is_reset` is known). InitJob ends with it; a producer that
/// runs apart from its consumer (`--role producer`) calls it for the job the consumer opened.
Status PlanStart(Backend& backend, const PipelineSettings& settings, JobPlan& plan);

/// `holds_run_lock`: this process holds the pipeline's run lock, so no other run of it is alive
/// on this host and a running job's owner is trusted to be gone even if its pid is in use (pids
/// are recycled). Without the lock, a live owner on this host refuses the run.
/// `resume_full_refresh`: an interrupted full refresh resumes instead of starting over; set when
/// a network queue still holds the job's pending iterations and its producer may still run.
Result<JobPlan> InitJob(Backend& backend, const PipelineSettings& settings, Source& source,
                        bool holds_run_lock, bool resume_full_refresh = false);

}  // namespace bizon
