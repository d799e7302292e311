#include "connectors/destinations/parquet/parquet_part_writer.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>

#include "duckdb/duckdb_client.h"

namespace bizon {
namespace {

constexpr std::string_view kTable = "part";

std::string_view DuckTypeName(ParquetColumnType type) {
  switch (type) {
    case ParquetColumnType::kText:
    case ParquetColumnType::kJson:
      return "VARCHAR";
    case ParquetColumnType::kBigint:
      return "BIGINT";
    case ParquetColumnType::kDouble:
      return "DOUBLE";
    case ParquetColumnType::kNumeric:
      return "DECIMAL(38, 9)";
    case ParquetColumnType::kBoolean:
      return "BOOLEAN";
    case ParquetColumnType::kTimestamp:
      return "TIMESTAMPTZ";
    case ParquetColumnType::kDate:
      return "DATE";
  }
  return "VARCHAR";
}

/// The destination record's columns.
std::vector<ParquetColumn> RecordColumns() {
  return {{"bizon_id", ParquetColumnType::kText},
          {"bizon_extracted_at", ParquetColumnType::kTimestamp},
          {"bizon_loaded_at", ParquetColumnType::kTimestamp},
          {"source_record_id", ParquetColumnType::kText},
          {"source_timestamp", ParquetColumnType::kTimestamp},
          {"source_data", ParquetColumnType::kJson}};
}

Status RowError(std::string_view record_id, std::string message) {
  return Status(StatusCode::kInvalidArgument, fmt::format("record {}: {}", record_id, message),
                FailureClass::kDestination);
}

/// Appends one JSON value into a column of `type`. Strings go to DuckDB as text, which casts them
/// to the column's type (a timestamp, a date, a number in quotes) or refuses the row.
Status AppendJsonValue(DuckAppender& appender, const ParquetColumn& column,
                       simdjson::dom::element element, std::string_view record_id) {
  using simdjson::dom::element_type;
  element_type kind = element.type();
  if (kind == element_type::NULL_VALUE) {
    appender.Null();
    return Status::Ok();
  }
  if (kind == element_type::STRING && column.type != ParquetColumnType::kJson) {
    appender.Text(std::string_view(element.get_string().value_unsafe()));
    return Status::Ok();
  }
  bool number =
      kind == element_type::INT64 || kind == element_type::UINT64 || kind == element_type::DOUBLE;
  switch (column.type) {
    case ParquetColumnType::kText:
    case ParquetColumnType::kJson:
      appender.Text(simdjson::minify(element));
      return Status::Ok();
    case ParquetColumnType::kBigint:
      if (kind == element_type::INT64) {
        appender.Int64(element.get_int64().value_unsafe());
        return Status::Ok();
      }
      break;
    case ParquetColumnType::kDouble:
      if (number) {
        appender.Double(element.get_double().value_unsafe());
        return Status::Ok();
      }
      break;
    case ParquetColumnType::kNumeric:
      if (number) {
        appender.Text(simdjson::minify(element));
        return Status::Ok();
      }
      break;
    case ParquetColumnType::kBoolean:
      if (kind == element_type::BOOL) {
        appender.Bool(element.get_bool().value_unsafe());
        return Status::Ok();
      }
      break;
    case ParquetColumnType::kTimestamp:
    case ParquetColumnType::kDate:
      break;
  }
  return RowError(record_id,
                  fmt::format("the value of '{}' ({}) does not fit its {} column", column.name,
                              simdjson::minify(element), DuckTypeName(column.type)));
}

}  // namespace

struct ParquetPartWriter::Engine {
  std::shared_ptr<DuckDatabase> database;
  std::optional<DuckConnection> connection;
  std::optional<DuckAppender> appender;
  simdjson::dom::parser parser;
};

ParquetPartWriter::ParquetPartWriter(std::unique_ptr<Engine> engine,
                                     std::optional<std::vector<ParquetColumn>> columns,
                                     ParquetCompression compression)
    : engine_(std::move(engine)),
      columns_(std::move(columns)),
      compression_(compression),
      random_(std::random_device{}()) {}

ParquetPartWriter::~ParquetPartWriter() = default;

Result<std::unique_ptr<ParquetPartWriter>> ParquetPartWriter::Make(
    std::optional<std::vector<ParquetColumn>> columns, ParquetCompression compression) {
  auto engine = std::make_unique<Engine>();
  BIZON_ASSIGN_OR_RETURN(engine->database, DuckDatabase::Open("", FailureClass::kDestination));
  BIZON_ASSIGN_OR_RETURN(DuckConnection connection, DuckConnection::Connect(engine->database));
  engine->connection.emplace(std::move(connection));
  // One thread: the consumer and producer keep the other cores busy, and DuckDB's per-thread
  // buffers would cost memory (1M records at part_size 8: 141 MiB peak instead of 176).
  BIZON_RETURN_IF_ERROR(engine->connection->Execute("SET threads = 1"));
  std::unique_ptr<ParquetPartWriter> writer(
      new ParquetPartWriter(std::move(engine), std::move(columns), compression));
  BIZON_RETURN_IF_ERROR(writer->StartTable());
  return writer;
}

Status ParquetPartWriter::StartTable() {
  engine_->appender.reset();
  const std::vector<ParquetColumn>& columns = columns_ ? *columns_ : RecordColumns();
  std::string sql = fmt::format("DROP TABLE IF EXISTS {0}; CREATE TABLE {0} (", kTable);
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i > 0) sql += ", ";
    sql += DuckQuoteIdentifier(columns[i].name) + " " + std::string(DuckTypeName(columns[i].type));
  }
  sql += ")";
  BIZON_RETURN_IF_ERROR(engine_->connection->Execute(sql));
  BIZON_ASSIGN_OR_RETURN(DuckAppender appender,
                         DuckAppender::Open(*engine_->connection, "", kTable));
  engine_->appender.emplace(std::move(appender));
  rows_ = 0;
  bytes_ = 0;
  return Status::Ok();
}

void ParquetPartWriter::AppendUuid() {
  // A random (version 4) UUID as 32 hex digits, the form the NDJSON output writes.
  uint64_t high = (random_() & 0xffffffffffff0fffULL) | 0x4000ULL;
  uint64_t low = (random_() & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  char text[32];
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int shift = 60, at = 0; shift >= 0; shift -= 4, ++at) {
    text[at] = kDigits[(high >> shift) & 0xf];
    text[at + 16] = kDigits[(low >> shift) & 0xf];
  }
  engine_->appender->Text(std::string_view(text, sizeof(text)));
}

Status ParquetPartWriter::AppendRecord(const RecordBatch& batch, size_t i, int64_t loaded_at_us) {
  DuckAppender& appender = *engine_->appender;
  AppendUuid();
  appender.TimestampMicros(batch.extracted_at_us(i));
  appender.TimestampMicros(loaded_at_us);
  appender.Text(batch.id(i));
  appender.TimestampMicros(batch.timestamp_us(i));
  appender.Text(batch.payload(i));
  BIZON_RETURN_IF_ERROR(appender.EndRow());
  ++rows_;
  bytes_ += static_cast<int64_t>(batch.payload(i).size() + batch.id(i).size());
  return Status::Ok();
}

Status ParquetPartWriter::AppendUnnested(std::string_view payload, std::string_view record_id) {
  const std::vector<ParquetColumn>& columns = *columns_;
  // simdjson reads up to SIMDJSON_PADDING bytes past the end: parse a padded copy.
  scratch_.assign(payload);
  scratch_.resize(payload.size() + simdjson::SIMDJSON_PADDING);
  simdjson::dom::object object;
  if (engine_->parser.parse(scratch_.data(), payload.size(), false).get(object)) {
    return RowError(record_id, "unnest needs a JSON object");
  }
  if (object.size() != columns.size()) {
    return RowError(record_id, fmt::format("{} keys, but its record_schema declares {}",
                                           object.size(), columns.size()));
  }
  std::string cast;  // Columns whose text DuckDB converts: one of them is at fault if it fails.
  for (const ParquetColumn& column : columns) {
    simdjson::dom::element element;
    if (object.at_key(column.name).get(element)) {
      return RowError(record_id,
                      fmt::format("no key '{}' declared in its record_schema", column.name));
    }
    if (element.is_string() && column.type != ParquetColumnType::kText &&
        column.type != ParquetColumnType::kJson) {
      cast += fmt::format("{}'{}'", cast.empty() ? "" : ", ", column.name);
    }
    BIZON_RETURN_IF_ERROR(AppendJsonValue(*engine_->appender, column, element, record_id));
  }
  if (Status ended = engine_->appender->EndRow(); !ended.ok()) {
    return RowError(record_id, fmt::format("a text value of {} does not fit its column: {}", cast,
                                           ended.message()));
  }
  ++rows_;
  bytes_ += static_cast<int64_t>(payload.size());
  return Status::Ok();
}

Status ParquetPartWriter::WritePart(const std::string& path) {
  BIZON_RETURN_IF_ERROR(engine_->appender->Close());
  engine_->appender.reset();
  std::string_view codec = compression_ == ParquetCompression::kSnappy ? "snappy" : "zstd";
  // One row group per part: a part is what the destination gathered between durable points.
  BIZON_RETURN_IF_ERROR(engine_->connection->Execute(
      fmt::format("COPY {} TO {} (FORMAT parquet, COMPRESSION {}, ROW_GROUP_SIZE {})", kTable,
                  DuckQuoteLiteral(path), codec, std::max<int64_t>(rows_, 1))));
  return StartTable();
}

Status ParquetPartWriter::Discard() { return StartTable(); }

}  // namespace bizon
