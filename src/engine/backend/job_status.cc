#include <string_view>

#include "bizon/backend.h"
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

}  // namespace bizon
