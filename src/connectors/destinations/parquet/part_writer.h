// PartWriter: gathers the rows of one table and writes them out as part files, for
// PartsDestination. ParquetPartWriter (DuckDB) and NdjsonPartWriter (JSON lines) implement it.
//
// Lifecycle: one writer per table, used by one thread at a time. After a failed append, call
// Discard() before appending again.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "bizon/record_batch.h"
#include "bizon/status.h"

namespace bizon {

class PartWriter {
 public:
  virtual ~PartWriter() = default;

  /// Appends record `i` of `batch` as a destination record (a fresh bizon_id per row).
  virtual Status AppendRecord(const RecordBatch& batch, size_t i, int64_t loaded_at_us) = 0;
  /// Appends the unnest columns of a payload, which must be a JSON object holding exactly the
  /// declared keys; a value that does not fit is kInvalidArgument naming the record.
  virtual Status AppendUnnested(std::string_view payload, std::string_view record_id) = 0;

  /// Rows appended since the last part.
  virtual int64_t rows() const = 0;
  /// Bytes of record text (payloads and ids) appended since the last part: what a part's memory
  /// grows with.
  virtual int64_t bytes() const = 0;

  /// Writes the rows appended since the last part to `path` (replacing it) and starts an empty
  /// part. Making the file durable is the caller's (PartStore::Stage).
  virtual Status WritePart(const std::string& path) = 0;
  /// Drops the rows appended since the last part.
  virtual Status Discard() = 0;
  /// The part files' extension: ".parquet", ".json".
  virtual std::string_view extension() const = 0;
};

}  // namespace bizon
