// The destination record every destination receives per row, rendered as one JSON object:
// bizon_id, bizon_extracted_at, bizon_loaded_at, source_record_id, source_timestamp, source_data.
#pragma once

#include <cstdint>
#include <string>

#include "bizon/record_batch.h"
#include "bizon/status.h"

namespace bizon {

/// RFC 3339 in UTC as the original writes it: "2024-12-05T12:00:00+00:00", with a 6-digit
/// fraction only when it is non-zero.
void AppendRfc3339(std::string& out, int64_t micros);

/// Appends record `i` of `batch` as a destination record (no trailing newline).
void AppendDestinationRecord(std::string& out, const RecordBatch& batch, size_t i,
                             int64_t loaded_at_us);

/// `id` between single quotes, with the backslash, the quote and every control character escaped
/// (\n, \r, \t, \xNN): how an error or a log line shows an id that may come from data, so that
/// the line stays one line and what it names is exactly visible.
std::string QuoteDestinationId(std::string_view id);

/// Refuses an empty id, and an id holding NUL or another control character (below U+0020, or
/// DEL): no destination stores one faithfully (a NUL ends a C string, a newline splits a log
/// line or a file listing). kInvalidArgument, failure class destination, naming the quoted id.
Status CheckDestinationIdCharacters(std::string_view id);

}  // namespace bizon
