#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "bizon/backend.h"
#include "bizon/clock.h"
#include "bizon/status.h"
#include "engine/backend/backend_support.h"

namespace bizon {

Status BackendError(StatusCode code, std::string message) {
  return Status(code, std::move(message), FailureClass::kBackend);
}

Status UnchangedResetOutcome(const std::optional<StreamReset>& reset, std::string_view job_id,
                             std::string_view reset_id) {
  if (!reset.has_value()) {
    return BackendError(StatusCode::kNotFound,
                        fmt::format("no stream reset has this id: {}", reset_id));
  }
  if (reset->consumed_by_job_id == job_id) return Status::Ok();
  return BackendError(
      StatusCode::kAborted,
      fmt::format("the stream reset was already consumed or cancelled: {}", reset_id));
}

// The lowercase names are the values the original writes into stream_jobs.status.
std::string_view ToString(JobStatus status) {
  switch (status) {
    case JobStatus::kStarted:
      return "started";
    case JobStatus::kRunning:
      return "running";
    case JobStatus::kFailed:
      return "failed";
    case JobStatus::kCancelled:
      return "cancelled";
    case JobStatus::kSucceeded:
      return "succeeded";
  }
  return "unknown";
}

Result<JobStatus> ParseJobStatus(std::string_view text) {
  for (JobStatus status : {JobStatus::kStarted, JobStatus::kRunning, JobStatus::kFailed,
                           JobStatus::kCancelled, JobStatus::kSucceeded}) {
    if (text == ToString(status)) return status;
  }
  return Fail(
      InvalidArgumentError("expected a job status (started, running, failed, cancelled "
                           "or succeeded), got '" +
                           std::string(text) + "'"));
}

StreamJob NewStreamJob(const StreamKey& key, std::string_view sync_mode,
                       std::optional<int64_t> total_records, std::string_view owner) {
  StreamJob job;
  job.id = NewUuidHex();
  job.key = key;
  job.sync_mode = std::string(sync_mode);
  job.total_records_to_fetch = total_records;
  job.created_at_us = NowMicros();
  job.updated_at_us = job.created_at_us;
  job.status = JobStatus::kStarted;
  job.owner = std::string(owner);
  return job;
}

}  // namespace bizon
