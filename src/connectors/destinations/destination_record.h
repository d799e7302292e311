// The destination record every destination receives per row, rendered as one JSON object:
// bizon_id, bizon_extracted_at, bizon_loaded_at, source_record_id, source_timestamp, source_data.
#pragma once

#include <sys/types.h>

#include <climits>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/destination.h"
#include "bizon/record_batch.h"
#include "bizon/status.h"

namespace bizon {

/// RFC 3339 in UTC as the original writes it: "2024-12-05T12:00:00+00:00", with a 6-digit
/// fraction only when it is non-zero.
void AppendRfc3339(std::string& out, int64_t micros);

/// Appends record `i` of `batch` as a destination record (no trailing newline).
void AppendDestinationRecord(std::string& out, const RecordBatch& batch, size_t i,
                             int64_t loaded_at_us);

/// Appends `text` as a JSON string (quotes included), escaped as AppendJsonString does, many
/// bytes at a time (see JsonStringEscaper).
void AppendJsonStringFast(std::string& out, std::string_view text);

/// Which loop AppendJsonStringFast and the record writer escape with on this CPU: "avx512-vbmi2"
/// (32 bytes at a time, no branch per escape) or "swar" (eight bytes at a time).
std::string_view JsonStringEscaper();
/// The escapers this CPU can run ("swar" always), and AppendJsonStringFast with a given one: for
/// tests that check each against AppendJsonString.
std::vector<std::string_view> JsonStringEscapers();
void AppendJsonStringWith(std::string& out, std::string_view text, std::string_view escaper);

/// Writes destination records straight into an output buffer, one pass per field: the record is
/// laid out in place (the buffer grows at most once per record, by a bound on its length), the
/// uuid comes from the writer's own generator, and `source_data` is escaped eight bytes at a
/// time. What a destination that renders many records uses; one writer per thread.
/// The calendar split and "YYYY-MM-DDTHH:MM:SS" of the last second formatted: records mostly
/// share their second, field by field.
struct SecondCache {
  int64_t second = INT64_MIN;
  char text[19] = {};
};

class DestinationRecordWriter {
 public:
  DestinationRecordWriter();

  /// Call once per batch before Append(): a forked child reseeds, so as not to repeat its
  /// parent's ids.
  void StartBatch();
  /// Appends record `i` of `batch` (no trailing newline), the same bytes as
  /// AppendDestinationRecord.
  void Append(std::string& out, const RecordBatch& batch, size_t i, int64_t loaded_at_us);

 private:
  std::mt19937_64 random_;
  pid_t seeded_for_;
  // One per timestamp field: the three rarely share a second (the source's timestamp is older).
  SecondCache extracted_at_;
  SecondCache loaded_at_;
  SecondCache source_timestamp_;
};

/// `id` between single quotes, with the backslash, the quote and every control character escaped
/// (\n, \r, \t, \xNN): how an error or a log line shows an id that may come from data, so that
/// the line stays one line and what it names is exactly visible.
std::string QuoteDestinationId(std::string_view id);

/// Refuses an empty id, and an id holding NUL or another control character (below U+0020, or
/// DEL): no destination stores one faithfully (a NUL ends a C string, a newline splits a log
/// line or a file listing). kInvalidArgument, failure class destination, naming the quoted id.
Status CheckDestinationIdCharacters(std::string_view id);

/// The rows of `batch` per destination id (empty: the default destination), in id order.
std::map<std::string, std::vector<size_t>, std::less<>> RowsByDestination(const RecordBatch& batch);

/// The table a table destination (postgres, bigquery) writes a run into before publishing it:
/// `<table>_temp` on a full refresh, `<table>_incremental` on an incremental run, the table itself
/// in stream mode.
std::string StagingTableName(std::string_view table, SyncMode sync_mode);

}  // namespace bizon
