// The pieces of a Sana Insights export apart from the HTTP, so the unit tests can feed them
// answers: reading the job's state from a poll answer, and turning the downloaded CSV into
// records.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/record_batch.h"
#include "bizon/status.h"
#include "http/json_page.h"

namespace bizon {

/// Where an export job stands, from the `data.status` of a poll answer.
enum class SanaJobPhase { kRunning, kSucceeded, kFailed };

/// "successful" is done; "failed", "error", "cancelled"/"canceled" and "expired" are final
/// failures; anything else (pending, queued, running, ...) is still running.
SanaJobPhase ClassifySanaJobStatus(std::string_view status);

struct SanaJobState {
  std::string status;
  SanaJobPhase phase = SanaJobPhase::kRunning;
  /// `data.link.url` once the job succeeded.
  std::string link_url;
  /// The job's error message when it failed, if the answer gives one.
  std::string error;
};

/// The `data.jobId` of the answer to POST /reports/query; a source error when absent.
Result<std::string> ReadSanaJobId(const JsonPage& page);

/// The state in a GET /reports/jobs/<id> answer. A missing status, or a successful job without
/// a link, is a source error naming the answer's origin.
Result<SanaJobState> ReadSanaJobState(const JsonPage& page);

/// Calls `visit(fields, line)` for each record of `csv` (RFC 4180 as Python's csv module reads
/// it: `,` separated, `"` quoted with `""` for a quote, records ending in \n, \r\n or \r; text
/// after a closing quote is kept; blank lines give no fields). `line` is where the record starts
/// (1-based). A quoted field still open at the end is a source error (a truncated download).
Status ForEachCsvRecord(std::string_view csv,
                        const std::function<Status(std::vector<std::string>&, size_t)>& visit);

/// The records of a report: the first CSV record names the columns, each later non-blank one
/// becomes {column: text} (a short row's missing columns are null; a repeated column name keeps
/// its first place and the last value), with id "0", "1", ... in order. The text must be UTF-8 (a
/// leading byte-order mark is dropped); a row longer than the header is a source error.
Result<RecordBatch> SanaReportRecords(std::string_view csv, int64_t extracted_at_us);

}  // namespace bizon
