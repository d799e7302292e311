#include <string_view>

#include "bizon/backend.h"
#include "bizon/clock.h"
#include "bizon/status.h"

namespace bizon {

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
