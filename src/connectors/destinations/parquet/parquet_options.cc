#include "connectors/destinations/parquet/parquet_part_writer.h"

// The Parquet options and column types: what the file and object-store destinations read from
// their config. Apart from the writer (parquet_part_writer.cc), so that a build without DuckDB
// still reads and checks them, and refuses only the writing.

#include <fmt/format.h>

#include <algorithm>

#include "common/connector_families.h"

namespace bizon {
namespace {

std::string Upper(std::string_view text) {
  std::string out(text);
  std::ranges::transform(out, out.begin(), [](unsigned char c) { return std::toupper(c); });
  return out;
}

}  // namespace

std::optional<ParquetColumnType> ParseParquetColumnType(std::string_view type) {
  std::string t = Upper(type);
  if (t == "STRING" || t == "TEXT" || t == "VARCHAR") return ParquetColumnType::kText;
  if (t == "INTEGER" || t == "INT" || t == "INT64" || t == "BIGINT") {
    return ParquetColumnType::kBigint;
  }
  if (t == "NUMBER" || t == "FLOAT" || t == "FLOAT64" || t == "DOUBLE") {
    return ParquetColumnType::kDouble;
  }
  if (t == "NUMERIC" || t == "DECIMAL") return ParquetColumnType::kNumeric;
  if (t == "BOOLEAN" || t == "BOOL") return ParquetColumnType::kBoolean;
  if (t == "TIMESTAMP" || t == "DATETIME" || t == "TIMESTAMPTZ") {
    return ParquetColumnType::kTimestamp;
  }
  if (t == "DATE") return ParquetColumnType::kDate;
  if (t == "JSON" || t == "JSONB") return ParquetColumnType::kJson;
  return std::nullopt;
}

std::optional<ParquetCompression> ParseParquetCompression(std::string_view name) {
  if (name == "zstd") return ParquetCompression::kZstd;
  if (name == "snappy") return ParquetCompression::kSnappy;
  return std::nullopt;
}

FieldSpec ParquetPartSizeField() {
  return {.name = "part_size",
          .type = FieldType::kNumber,
          .description =
              "The most MB of records in one part file (for Parquet, one row group); a table's "
              "rows are also written out at each durable point (buffer_size). Peak memory grows "
              "by about 4 MB per MB of it.",
          .default_value = Value(8),
          .minimum = 0.1};
}

FieldSpec ParquetCompressionField() {
  return {.name = "compression",
          .type = FieldType::kEnum,
          .description = "Parquet compression codec (format: parquet only).",
          .default_value = Value("zstd"),
          .enum_values = {"zstd", "snappy"}};
}

std::vector<ConfigRuleViolation> CheckParquetSchemas(const Value& config) {
  std::vector<ConfigRuleViolation> violations;
  const Value* schemas = config.Find("record_schemas");
  if (schemas == nullptr || !schemas->is_list()) return violations;
  for (size_t i = 0; i < schemas->AsList().size(); ++i) {
    const Value* columns = schemas->AsList()[i].Find("record_schema");
    if (columns == nullptr || !columns->is_list()) continue;
    for (size_t j = 0; j < columns->AsList().size(); ++j) {
      const Value& column = columns->AsList()[j];
      std::string type = column.GetString("type");
      if (ParseParquetColumnType(type)) continue;
      const Value* node = column.Find("type");
      violations.push_back(
          {.path = fmt::format("record_schemas[{}].record_schema[{}].type", i, j),
           .message = fmt::format("column '{}' has type '{}', which Parquet output cannot hold; "
                                  "use string, integer, number, numeric, boolean, timestamp, "
                                  "date or json",
                                  column.GetString("name"), type),
           .mark = node != nullptr ? node->mark() : column.mark()});
    }
  }
  return violations;
}

std::vector<ConfigRuleViolation> CheckParquetOutput(const Value& config) {
  if (const ConnectorFamily* duckdb = FindConnectorFamily("duckdb");
      duckdb != nullptr && !duckdb->built) {
    // The validator gives a default the position of its block: such a `format` was not written.
    const Value* format = config.Find("format");
    bool written = format != nullptr && (format->mark().line != config.mark().line ||
                                         format->mark().column != config.mark().column);
    std::string what = written ? std::string(kParquetNeedsDuckdb)
                               : "format: parquet, the default (DuckDB writes Parquet files; "
                                 "format: json needs no DuckDB),";
    return {{.path = "format", .message = NotBuiltError(what, "duckdb").message()}};
  }
  return CheckParquetSchemas(config);
}

Result<std::vector<std::pair<std::string, std::vector<ParquetColumn>>>> ReadParquetSchemas(
    const Value& config) {
  if (std::vector<ConfigRuleViolation> violations = CheckParquetSchemas(config);
      !violations.empty()) {
    return Fail(InvalidArgumentError(fmt::format(
        "destination.config.{}: {}", violations.front().path, violations.front().message)));
  }
  std::vector<std::pair<std::string, std::vector<ParquetColumn>>> schemas;
  const Value* entries = config.Find("record_schemas");
  if (entries == nullptr || !entries->is_list()) return schemas;
  for (const Value& entry : entries->AsList()) {
    std::vector<ParquetColumn> columns;
    if (const Value* list = entry.Find("record_schema"); list != nullptr && list->is_list()) {
      for (const Value& column : list->AsList()) {
        columns.push_back(
            {column.GetString("name"), *ParseParquetColumnType(column.GetString("type"))});
      }
    }
    schemas.emplace_back(entry.GetString("destination_id"), std::move(columns));
  }
  return schemas;
}

}  // namespace bizon
