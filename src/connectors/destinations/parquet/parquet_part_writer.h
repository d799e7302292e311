// ParquetPartWriter: rows of one destination table gathered in an in-memory DuckDB table and
// written out as Parquet part files by DuckDB's own Parquet writer (COPY ... FORMAT parquet).
//
// Columns are either the destination record (bizon_id, bizon_extracted_at, bizon_loaded_at,
// source_record_id, source_timestamp, source_data: timestamps as UTC TIMESTAMPs, source_data as
// JSON text), or, with unnest, the typed columns of a `record_schemas` entry filled from the
// payload's keys.
//
// Each WritePart() writes every row appended since the last part as one file with one row group
// (the destinations call it when a table has gathered `part_size` MB of records, and at each
// durable point) and empties the table; making the file durable is the caller's
// (PartStore::Stage). DuckDB runs on one thread here, which keeps its buffers small.
// Discard() drops those rows instead.
//
// Lifecycle: one writer per table, used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/config_spec.h"
#include "bizon/record_batch.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "connectors/destinations/parquet/part_writer.h"

namespace bizon {

enum class ParquetColumnType {
  kText,
  kBigint,
  kDouble,
  kNumeric,
  kBoolean,
  kTimestamp,
  kDate,
  kJson
};

/// The column type of a record_schemas `type` (string, INTEGER, FLOAT64, NUMERIC, BOOLEAN,
/// TIMESTAMP, DATE, JSON and their usual spellings), case-insensitively; nullopt otherwise.
std::optional<ParquetColumnType> ParseParquetColumnType(std::string_view type);

struct ParquetColumn {
  std::string name;
  ParquetColumnType type = ParquetColumnType::kText;
};

enum class ParquetCompression { kZstd, kSnappy };

/// "zstd" or "snappy"; nullopt otherwise.
std::optional<ParquetCompression> ParseParquetCompression(std::string_view name);

/// The unnest columns of each record_schemas entry of a destination config, by destination id.
/// A type no column can hold is kInvalidArgument (failure class config) naming the YAML path.
Result<std::vector<std::pair<std::string, std::vector<ParquetColumn>>>> ReadParquetSchemas(
    const Value& config);

/// `part_size`: the most MB of records one part file (one row group) holds before it is written.
FieldSpec ParquetPartSizeField();
/// `compression`: the Parquet codec (ParseParquetCompression's names).
FieldSpec ParquetCompressionField();

/// check_config of a destination writing Parquet: each record_schemas column type must be one
/// ParseParquetColumnType knows. Violations carry `record_schemas[i].record_schema[j].type`.
std::vector<ConfigRuleViolation> CheckParquetSchemas(const Value& config);
/// What a build without DuckDB refuses (NotBuiltError's `what`): Parquet output.
inline constexpr std::string_view kParquetNeedsDuckdb =
    "format: parquet (DuckDB writes Parquet files)";
/// check_config of a destination block whose parts are Parquet: in a build without DuckDB (which
/// writes them) one violation at `format` naming the CMake option, so `bizon run` and `config
/// validate` refuse it before anything is read; else CheckParquetSchemas.
std::vector<ConfigRuleViolation> CheckParquetOutput(const Value& config);

class ParquetPartWriter final : public PartWriter {
 public:
  /// `columns`: nullopt for the destination record's columns, else the unnest columns.
  static Result<std::unique_ptr<ParquetPartWriter>> Make(
      std::optional<std::vector<ParquetColumn>> columns, ParquetCompression compression);
  ~ParquetPartWriter() override;
  ParquetPartWriter(const ParquetPartWriter&) = delete;
  ParquetPartWriter& operator=(const ParquetPartWriter&) = delete;

  Status AppendRecord(const RecordBatch& batch, size_t i, int64_t loaded_at_us) override;
  /// A value the column's type cannot take is kInvalidArgument naming the record.
  Status AppendUnnested(std::string_view payload, std::string_view record_id) override;
  int64_t rows() const override { return rows_; }
  int64_t bytes() const override { return bytes_; }
  Status WritePart(const std::string& path) override;
  Status Discard() override;
  std::string_view extension() const override { return ".parquet"; }

 private:
  struct Engine;
  ParquetPartWriter(std::unique_ptr<Engine> engine,
                    std::optional<std::vector<ParquetColumn>> columns,
                    ParquetCompression compression);
  Status StartTable();
  void AppendUuid();

  std::unique_ptr<Engine> engine_;
  std::optional<std::vector<ParquetColumn>> columns_;
  ParquetCompression compression_;
  int64_t rows_ = 0;
  int64_t bytes_ = 0;
  std::mt19937_64 random_;
  std::string scratch_;
};

}  // namespace bizon
