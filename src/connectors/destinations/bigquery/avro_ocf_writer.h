// AvroOcfWriter: builds an Avro object container file (OCF) in memory, with avro-c encoding the
// rows and this class writing the container around them.
//
// Why not avro-c's own file writer: it re-serialises the schema into the header from its parsed
// form, which has no room for attributes it does not model, so `logicalType` (timestamp-micros,
// date, time-micros, decimal, datetime) and BigQuery's `sqlType` are dropped, and a loader then
// sees plain longs, ints and strings. Here the header carries the caller's schema text verbatim,
// and avro-c (which ignores those attributes and encodes the underlying type) encodes the datums.
//
// Layout (Avro 1.11 "Object Container Files"): magic `Obj\x01`; the metadata map
// {avro.schema, avro.codec = deflate}; a 16-byte sync marker; then blocks of
// (row count, byte length, raw-deflated rows, sync marker). A block is closed once its encoded
// rows reach `block_bytes`.
//
// Thread-safety: one writer is used by one thread.
#pragma once

#include <avro.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "bizon/status.h"

namespace bizon {

class AvroOcfWriter {
 public:
  /// `schema_json` must be an Avro record schema; an invalid one is kInvalidArgument with
  /// avro-c's reason.
  static Result<std::unique_ptr<AvroOcfWriter>> Make(std::string schema_json,
                                                     int64_t block_bytes = 1 << 20);
  ~AvroOcfWriter();
  AvroOcfWriter(const AvroOcfWriter&) = delete;
  AvroOcfWriter& operator=(const AvroOcfWriter&) = delete;

  /// The next row, a record value of the schema: fill its fields, then AppendRow().
  avro_value_t& row() { return row_; }
  /// Field `index` of the next row.
  Result<avro_value_t> Field(size_t index);
  /// Encodes the filled row into the open block and resets it for the next one.
  Status AppendRow();
  /// Closes the last block and returns the whole file; the writer is empty afterwards.
  Result<std::string> Finish();

  int64_t rows() const { return total_rows_; }
  const std::string& schema_json() const { return schema_json_; }

 private:
  AvroOcfWriter() = default;
  Status CloseBlock();

  std::string schema_json_;
  int64_t block_bytes_ = 0;
  avro_schema_t schema_ = nullptr;
  avro_value_iface_t* iface_ = nullptr;
  avro_value_t row_{};
  bool row_made_ = false;
  avro_writer_t encoder_ = nullptr;
  std::string scratch_;  // One encoded row.
  std::string block_;    // Encoded rows of the open block.
  int64_t block_rows_ = 0;
  int64_t total_rows_ = 0;
  std::array<char, 16> sync_{};
  std::string file_;  // Header and closed blocks.
};

/// Appends `value` as an Avro long (zig-zag varint).
void AppendAvroLong(std::string& out, int64_t value);

}  // namespace bizon
