#include "connectors/destinations/duckdb/duckdb_destination.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bizon/clock.h"
#include "bizon/config_spec.h"
#include "connectors/destinations/destination_options.h"
#include "connectors/destinations/destination_record.h"
#include "connectors/destinations/postgres/postgres_destination.h"
#include "connectors/registration.h"
#include "http/json_page.h"

namespace bizon {
namespace {

constexpr std::string_view kLoadIdColumn = "_bizon_load_id";
constexpr std::string_view kLoadLog = "_bizon_loads";
constexpr std::string_view kLoadSequence = "_bizon_load_id_seq";
constexpr std::string_view kMergeStagingSuffix = "_merge";
// A merge row's position in its load and its delete flag, beside the load id in staging.
constexpr std::string_view kSequenceColumn = "_bizon_seq";
constexpr std::string_view kDeletedColumn = "_bizon_deleted";

Status DestinationError(StatusCode code, std::string message) {
  return Status(code, std::move(message), FailureClass::kDestination);
}

Status ConfigError(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message), FailureClass::kConfig);
}

std::string Upper(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper;
}

std::string_view TrimRight(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n' ||
                           text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

/// A count DuckDB returned as text (0 for none).
int64_t ParseCount(const std::optional<std::string>& text) {
  int64_t count = 0;
  // A malformed count stays 0: DuckDB's counts are always integers.
  if (text) (void)std::from_chars(text->data(), text->data() + text->size(), count);
  return count;
}

}  // namespace

std::optional<int64_t> ParseDuckInstant(std::string_view text) {
  size_t sign_at = text.size() > 19 ? text.find_first_of("+-", 19) : std::string_view::npos;
  int64_t offset_seconds = 0;
  if (sign_at != std::string_view::npos) {
    std::string digits;
    for (char c : text.substr(sign_at + 1)) {
      if (c != ':') digits += c;
    }
    if (digits.size() != 2 && digits.size() != 4) return std::nullopt;
    int hours = 0;
    int minutes = 0;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + 2, hours);
    if (error != std::errc() || end != digits.data() + 2) return std::nullopt;
    if (digits.size() == 4) {
      auto [tail, failure] = std::from_chars(digits.data() + 2, digits.data() + 4, minutes);
      if (failure != std::errc() || tail != digits.data() + 4) return std::nullopt;
    }
    offset_seconds =
        (text[sign_at] == '-' ? -1 : 1) * (int64_t{hours} * 3600 + int64_t{minutes} * 60);
    text = text.substr(0, sign_at);
  }
  Result<int64_t> micros = ParseTimestamp(text);
  if (!micros.has_value()) return std::nullopt;
  return *micros - offset_seconds * 1'000'000;
}

namespace {

/// DuckDB matches identifiers case-insensitively, even quoted ones.
bool SameName(std::string_view a, std::string_view b) { return Upper(a) == Upper(b); }

}  // namespace

// -----------------------------------------------------------------------------------------------
// Types.

std::optional<DuckColumnType> ParseDuckColumnType(std::string_view type) {
  // The names the postgres destination takes, each to the DuckDB type of the same meaning.
  std::optional<PgColumnType> postgres = ParsePgColumnType(type);
  if (!postgres) return std::nullopt;
  switch (*postgres) {
    case PgColumnType::kText:
      return DuckColumnType::kVarchar;
    case PgColumnType::kBigint:
      return DuckColumnType::kBigint;
    case PgColumnType::kDouble:
      return DuckColumnType::kDouble;
    case PgColumnType::kNumeric:
      return DuckColumnType::kDecimal;
    case PgColumnType::kBoolean:
      return DuckColumnType::kBoolean;
    case PgColumnType::kTimestamptz:
      return DuckColumnType::kTimestamptz;
    case PgColumnType::kDate:
      return DuckColumnType::kDate;
    case PgColumnType::kJsonb:
      return DuckColumnType::kJson;
  }
  return std::nullopt;
}

std::string_view DuckTypeName(DuckColumnType type) {
  switch (type) {
    case DuckColumnType::kVarchar:
      return "VARCHAR";
    case DuckColumnType::kBigint:
      return "BIGINT";
    case DuckColumnType::kDouble:
      return "DOUBLE";
    case DuckColumnType::kDecimal:
      return "DECIMAL(38, 9)";
    case DuckColumnType::kBoolean:
      return "BOOLEAN";
    case DuckColumnType::kTimestamptz:
      return "TIMESTAMPTZ";
    case DuckColumnType::kDate:
      return "DATE";
    case DuckColumnType::kJson:
      return "JSON";
  }
  return "VARCHAR";
}

Status CheckDuckTableName(std::string_view table, SyncMode sync_mode) {
  (void)sync_mode;  // DuckDB names have no length limit to leave room for a staging suffix.
  BIZON_RETURN_IF_ERROR(CheckDestinationIdCharacters(table));
  if (SameName(table, kLoadLog) || SameName(table, kLoadSequence)) {
    return DestinationError(
        StatusCode::kInvalidArgument,
        fmt::format("a destination id must not name the duckdb destination's own bookkeeping "
                    "table or sequence: {}",
                    QuoteDestinationId(table)));
  }
  return Status::Ok();
}

// -----------------------------------------------------------------------------------------------
// Row encoding.

/// One value of an unnested row, held until the row's columns are appended in table order.
struct Slot {
  enum class Kind { kNull, kText, kInteger, kReal, kBoolean, kMicros };
  Kind kind = Kind::kNull;
  std::string text;
  int64_t integer = 0;
  double real = 0;
  bool present = false;
};

struct DuckdbDestination::RowEncoder {
  std::string padded;
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document document;
  std::vector<Slot> slots;
  simdjson::dom::parser dom_parser;  // hard_delete paths.
  static Status NotJson(std::string_view record_id, simdjson::error_code error) {
    return DestinationError(
        StatusCode::kInvalidArgument,
        fmt::format("record {} is not valid JSON: {}", record_id, simdjson::error_message(error)));
  }

  static Status Refused(std::string_view record_id, std::string_view key, DuckColumnType type,
                        std::string_view why) {
    return DestinationError(StatusCode::kInvalidArgument,
                            fmt::format("record {} key '{}': {} cannot be stored in a {} column",
                                        record_id, key, why, DuckTypeName(type)));
  }

  /// A string value into a column of `type`: kept as text for DuckDB to cast, except what is
  /// parsed here (integers, reals, booleans, UTC timestamps).
  static Status FromString(std::string_view text, DuckColumnType type, Slot& slot,
                           std::string_view record_id, std::string_view key) {
    slot.kind = Slot::Kind::kText;
    slot.text.assign(text);
    if (type == DuckColumnType::kBigint) {
      auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), slot.integer);
      if (error != std::errc() || end != text.data() + text.size()) {
        return Refused(record_id, key, type, "a string that is not an integer");
      }
      slot.kind = Slot::Kind::kInteger;
    } else if (type == DuckColumnType::kBoolean) {
      std::string upper = Upper(text);
      if (upper != "TRUE" && upper != "FALSE") {
        return Refused(record_id, key, type, "a string other than true or false");
      }
      slot.kind = Slot::Kind::kBoolean;
      slot.integer = upper == "TRUE" ? 1 : 0;
    } else if (type == DuckColumnType::kTimestamptz) {
      // Other forms are left to DuckDB's cast.
      if (std::optional<int64_t> micros = ParseDuckInstant(text)) {
        slot.kind = Slot::Kind::kMicros;
        slot.integer = *micros;
      }
    }
    return Status::Ok();
  }

  static Status FromNumber(simdjson::ondemand::value& value, DuckColumnType type, Slot& slot,
                           std::string_view record_id, std::string_view key) {
    std::string_view token = TrimRight(value.raw_json_token());
    switch (type) {
      case DuckColumnType::kBigint: {
        auto [end, error] =
            std::from_chars(token.data(), token.data() + token.size(), slot.integer);
        if (error != std::errc() || end != token.data() + token.size()) {
          return Refused(record_id, key, type, fmt::format("the number {}", token));
        }
        slot.kind = Slot::Kind::kInteger;
        return Status::Ok();
      }
      case DuckColumnType::kDouble:
        if (value.get_double().get(slot.real)) {
          return Refused(record_id, key, type, fmt::format("the number {}", token));
        }
        slot.kind = Slot::Kind::kReal;
        return Status::Ok();
      case DuckColumnType::kVarchar:
      case DuckColumnType::kDecimal:
      case DuckColumnType::kJson:
        slot.kind = Slot::Kind::kText;  // Every digit kept: DuckDB parses the decimal itself.
        slot.text.assign(token);
        return Status::Ok();
      default:
        return Refused(record_id, key, type, "a number");
    }
  }

  /// One JSON value as the slot of a column of `type`.
  static Status Encode(simdjson::ondemand::value value, DuckColumnType type, Slot& slot,
                       std::string_view record_id, std::string_view key) {
    simdjson::ondemand::json_type json_type;
    if (auto error = value.type().get(json_type)) return NotJson(record_id, error);
    slot.present = true;
    slot.kind = Slot::Kind::kNull;
    switch (json_type) {
      case simdjson::ondemand::json_type::null:
        return Status::Ok();
      case simdjson::ondemand::json_type::string: {
        if (type == DuckColumnType::kJson) {
          slot.kind = Slot::Kind::kText;
          slot.text.assign(TrimRight(value.raw_json_token()));
          return Status::Ok();
        }
        std::string_view text;
        if (auto error = value.get_string().get(text)) return NotJson(record_id, error);
        return FromString(text, type, slot, record_id, key);
      }
      case simdjson::ondemand::json_type::boolean: {
        bool flag = false;
        if (auto error = value.get_bool().get(flag)) return NotJson(record_id, error);
        if (type == DuckColumnType::kBoolean) {
          slot.kind = Slot::Kind::kBoolean;
          slot.integer = flag ? 1 : 0;
          return Status::Ok();
        }
        if (type != DuckColumnType::kVarchar && type != DuckColumnType::kJson) {
          return Refused(record_id, key, type, "a boolean");
        }
        slot.kind = Slot::Kind::kText;
        slot.text = flag ? "true" : "false";
        return Status::Ok();
      }
      case simdjson::ondemand::json_type::number:
        return FromNumber(value, type, slot, record_id, key);
      case simdjson::ondemand::json_type::object:
      case simdjson::ondemand::json_type::array: {
        if (type != DuckColumnType::kVarchar && type != DuckColumnType::kJson) {
          return Refused(record_id, key, type, "an object or array");
        }
        std::string_view raw;
        if (json_type == simdjson::ondemand::json_type::object) {
          simdjson::ondemand::object object;
          if (auto error = value.get_object().get(object)) return NotJson(record_id, error);
          if (auto error = object.raw_json().get(raw)) return NotJson(record_id, error);
        } else {
          simdjson::ondemand::array array;
          if (auto error = value.get_array().get(array)) return NotJson(record_id, error);
          if (auto error = array.raw_json().get(raw)) return NotJson(record_id, error);
        }
        slot.kind = Slot::Kind::kText;
        slot.text.assign(TrimRight(raw));
        return Status::Ok();
      }
    }
    return Status::Ok();
  }

  /// Reads the record into `slots`, one per column of `columns`. The record's keys must be
  /// exactly the schema's, as the postgres and file destinations want them.
  Status Read(std::string_view payload, std::string_view record_id, std::string_view table,
              const std::vector<Column>& columns) {
    padded.assign(payload);
    padded.append(simdjson::SIMDJSON_PADDING, '\0');
    if (auto error = parser.iterate(padded.data(), payload.size(), padded.size()).get(document)) {
      return NotJson(record_id, error);
    }
    simdjson::ondemand::object object;
    if (document.get_object().get(object)) {
      return DestinationError(StatusCode::kInvalidArgument,
                              fmt::format("record {} is not a JSON object", record_id));
    }
    slots.resize(columns.size());
    for (Slot& slot : slots) slot.present = false;
    for (auto field_result : object) {
      simdjson::ondemand::field field;
      std::string_view key;
      if (auto error = std::move(field_result).get(field)) return NotJson(record_id, error);
      if (auto error = field.unescaped_key().get(key)) return NotJson(record_id, error);
      size_t index = 0;
      while (index < columns.size() && columns[index].name != key) ++index;
      if (index == columns.size()) {
        return DestinationError(
            StatusCode::kInvalidArgument,
            fmt::format("record {} has key '{}', which the record_schema of '{}' does not declare",
                        record_id, key, table));
      }
      if (slots[index].present) {
        return DestinationError(StatusCode::kInvalidArgument,
                                fmt::format("record {} has key '{}' twice", record_id, key));
      }
      BIZON_RETURN_IF_ERROR(
          Encode(field.value(), columns[index].type, slots[index], record_id, columns[index].name));
    }
    for (size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].present) continue;
      return DestinationError(
          StatusCode::kInvalidArgument,
          fmt::format("record {} has no key '{}' declared in the record_schema of '{}'", record_id,
                      columns[i].name, table));
    }
    return Status::Ok();
  }

  void AppendSlots(DuckAppender& appender) const {
    for (const Slot& slot : slots) {
      switch (slot.kind) {
        case Slot::Kind::kNull:
          appender.Null();
          break;
        case Slot::Kind::kText:
          appender.Text(slot.text);
          break;
        case Slot::Kind::kInteger:
          appender.Int64(slot.integer);
          break;
        case Slot::Kind::kReal:
          appender.Double(slot.real);
          break;
        case Slot::Kind::kBoolean:
          appender.Bool(slot.integer != 0);
          break;
        case Slot::Kind::kMicros:
          appender.TimestampMicros(slot.integer);
          break;
      }
    }
  }
};

// -----------------------------------------------------------------------------------------------
// Construction.

namespace {

/// The destination's options, declared once (below): the registry's spec and ReadOptions use it.
ConfigSpec DuckdbDestinationSpec();

}  // namespace

DuckdbDestination::DuckdbDestination(const DestinationContext& context)
    : sync_(context.sync), encoder_(std::make_unique<RowEncoder>()) {
  raw_columns_ = {{"_bizon_id", DuckColumnType::kVarchar},
                  {"_bizon_extracted_at", DuckColumnType::kTimestamptz},
                  {"_bizon_loaded_at", DuckColumnType::kTimestamptz},
                  {"_source_record_id", DuckColumnType::kVarchar},
                  {"_source_timestamp", DuckColumnType::kTimestamptz},
                  {"_source_data", DuckColumnType::kJson}};
}

DuckdbDestination::~DuckdbDestination() {
  // An open load rolls back: its appenders go first, without flushing.
  AbandonLoad();
}

Status DuckdbDestination::ReadRecordSchemas(const Value& config) {
  const Value* schemas = config.Find("record_schemas");
  if (schemas == nullptr || !schemas->is_list()) return Status::Ok();
  for (const Value& schema : schemas->AsList()) {
    std::string id = schema.GetString("destination_id");
    std::vector<Column> columns;
    if (const Value* list = schema.Find("record_schema"); list != nullptr && list->is_list()) {
      for (const Value& column : list->AsList()) {
        std::string name = column.GetString("name");
        std::string type = column.GetString("type");
        std::optional<DuckColumnType> parsed = ParseDuckColumnType(type);
        if (!parsed) {
          return ConfigError(fmt::format(
              "destination.config.record_schemas: column '{}' of '{}' has type '{}', which the "
              "duckdb destination cannot store; use string, integer, number, numeric, boolean, "
              "timestamp, date or json",
              name, id, type));
        }
        bool twice = std::any_of(columns.begin(), columns.end(),
                                 [&](const Column& other) { return SameName(other.name, name); });
        if (name.empty() || twice || SameName(name, kLoadIdColumn)) {
          return ConfigError(fmt::format(
              "destination.config.record_schemas: a column name of '{}' is empty, repeated (DuckDB "
              "ignores case) or the destination's own {}: '{}'",
              id, kLoadIdColumn, name));
        }
        columns.push_back({name, *parsed});
      }
    }
    schemas_[id] = std::move(columns);
  }
  return Status::Ok();
}

Result<std::string> DuckdbDestination::ReadOptions(const Value& config) {
  FieldSpec declaration = Option::Object("config", DuckdbDestinationSpec().fields);
  BIZON_ASSIGN_OR_RETURN(TableOptions table, ReadTableOptions(declaration, config));
  schema_ = std::move(table.schema);
  unnest_ = table.unnest;
  OptionReader options(declaration, config);
  database_path_ = StringOrEmpty(options, "database");
  threads_ = options.Integer("threads");
  memory_limit_mb_ = options.Integer("memory_limit_mb");
  BIZON_RETURN_IF_ERROR(options.status());
  return std::move(table.table);
}

Result<std::unique_ptr<DuckdbDestination>> DuckdbDestination::Create(
    const DestinationContext& context) {
  std::unique_ptr<DuckdbDestination> destination(new DuckdbDestination(context));
  BIZON_ASSIGN_OR_RETURN(std::string table, destination->ReadOptions(context.config));
  if (destination->database_path_.empty() || destination->database_path_ == ":memory:") {
    return Fail(ConfigError(
        "destination.config.database: the duckdb destination needs a database file path"));
  }
  BIZON_RETURN_IF_ERROR(destination->ReadRecordSchemas(context.config));
  BIZON_ASSIGN_OR_RETURN(destination->policies_, ReadTablePolicies(context.config));
  BIZON_RETURN_IF_ERROR(destination->CheckPolicies());
  if (table.empty() && destination->unnest_ && destination->schemas_.size() == 1) {
    table = destination->schemas_.begin()->first;  // The one schema names the one table.
  }
  if (table.empty()) table = context.sync.source_name + "_" + context.sync.stream_name;
  destination->default_table_ = table;
  if (auto staged = destination->TableFor(table); !staged) {
    return Fail(staged.error().WithFailureClass(FailureClass::kConfig));
  }
  return destination;
}

// -----------------------------------------------------------------------------------------------
// Names and DDL.

std::string DuckdbDestination::Qualified(std::string_view table) const {
  return quoted_schema_ + "." + DuckQuoteIdentifier(table);
}

Result<DuckdbDestination::TableState*> DuckdbDestination::TableFor(std::string_view table_name) {
  if (auto found = tables_.find(table_name); found != tables_.end()) return &found->second;
  BIZON_RETURN_IF_ERROR(CheckDuckTableName(table_name, sync_.sync_mode));
  const TablePolicy& policy = policies_.For(table_name);
  SyncMode mode =
      policy.disposition == WriteDisposition::kReplace ? SyncMode::kFullRefresh : sync_.sync_mode;
  // A merging stream stages its loads beside the table until their cursor is recorded.
  std::string staging = mode == SyncMode::kStream && policy.merges()
                            ? std::string(table_name) + std::string(kMergeStagingSuffix)
                            : StagingTableName(table_name, mode);
  for (const auto& [name, other] : tables_) {
    // `x` stages into `x_temp`, the table of the id `x_temp`; and DuckDB ignores case.
    if (SameName(other.staging, table_name) || SameName(other.name, staging) ||
        SameName(other.name, table_name)) {
      return Fail(DestinationError(
          StatusCode::kInvalidArgument,
          fmt::format("two destination ids of one job would share a duckdb table (names differ "
                      "only by case, or one's staging table is the other's table): {} and {}",
                      QuoteDestinationId(table_name), QuoteDestinationId(name))));
    }
  }
  TableState state{.name = std::string(table_name),
                   .staging = std::move(staging),
                   .mode = mode,
                   .policy = &policy};
  return &tables_.emplace(state.name, std::move(state)).first->second;
}

Result<const std::vector<DuckdbDestination::Column>*> DuckdbDestination::ColumnsFor(
    std::string_view table_name) const {
  if (!unnest_) return &raw_columns_;
  auto schema = schemas_.find(table_name);
  if (schema == schemas_.end()) {
    return Fail(DestinationError(
        StatusCode::kInvalidArgument,
        fmt::format("unnest is on but record_schemas has no entry for destination_id {}",
                    QuoteDestinationId(table_name))));
  }
  return &schema->second;
}

std::string DuckdbDestination::ColumnDefinitions(const std::vector<Column>& columns) const {
  std::string definitions;
  for (const Column& column : columns) {
    if (!definitions.empty()) definitions += ", ";
    definitions += DuckQuoteIdentifier(column.name);
    definitions += ' ';
    definitions += DuckTypeName(column.type);
  }
  return definitions;
}

std::string DuckdbDestination::ColumnList(const std::vector<Column>& columns) const {
  std::string list;
  for (const Column& column : columns) {
    if (!list.empty()) list += ", ";
    list += DuckQuoteIdentifier(column.name);
  }
  return list;
}

Result<bool> DuckdbDestination::TableExists(std::string_view table) {
  BIZON_ASSIGN_OR_RETURN(
      std::optional<std::string> count,
      connection_->QueryValue("SELECT count(*) FROM duckdb_tables() WHERE database_name = "
                              "current_database() AND lower(schema_name) = lower($1) AND "
                              "lower(table_name) = lower($2)",
                              {schema_, std::string(table)}));
  return ParseCount(count) > 0;
}

Status DuckdbDestination::EnsureLoadLog() {
  return connection_->Execute(
      fmt::format("CREATE SCHEMA IF NOT EXISTS {0};"
                  " CREATE SEQUENCE IF NOT EXISTS {1};"
                  " CREATE TABLE IF NOT EXISTS {2} ("
                  " load_id BIGINT NOT NULL,"
                  " job_id VARCHAR NOT NULL,"
                  " table_name VARCHAR NOT NULL,"
                  " staging_name VARCHAR NOT NULL,"
                  " kind VARCHAR NOT NULL CHECK (kind IN ('track', 'write', 'publish')),"
                  " rows BIGINT NOT NULL,"
                  " created_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp)",
                  quoted_schema_, Qualified(kLoadSequence), Qualified(kLoadLog)));
}

Status DuckdbDestination::Track(TableState& table) {
  BIZON_ASSIGN_OR_RETURN(const std::vector<Column>* columns, ColumnsFor(table.name));
  std::string definitions = StagingDefinitions(table, *columns);
  if (table.merges_continuously()) {
    // Kept across jobs: each applies only its own loads (ApplyMerge()).
    BIZON_RETURN_IF_ERROR(connection_->Execute(
        fmt::format("CREATE TABLE IF NOT EXISTS {} ({}); CREATE TABLE IF NOT EXISTS {} ({})",
                    Qualified(table.staging), definitions, Qualified(table.name),
                    ColumnDefinitions(*columns))));
  } else if (table.mode != SyncMode::kStream) {
    // Whatever is staged belongs to an abandoned job, whose rows will be fetched again.
    BIZON_RETURN_IF_ERROR(
        connection_->Execute(fmt::format("DROP TABLE IF EXISTS {0}; CREATE TABLE {0} ({1})",
                                         Qualified(table.staging), definitions)));
    BIZON_RETURN_IF_ERROR(connection_->Execute(
        fmt::format("DELETE FROM {} WHERE table_name = $1 AND staging_name = $2"
                    " AND kind <> 'publish' AND job_id <> $3",
                    Qualified(kLoadLog)),
        {table.name, table.staging, sync_.job_id}));
  } else {
    BIZON_RETURN_IF_ERROR(connection_->Execute(
        fmt::format("CREATE TABLE IF NOT EXISTS {} ({})", Qualified(table.name), definitions)));
    // A table made by a full refresh or by hand lacks the load column; add it (existing rows
    // keep NULL: they belong to no load this destination could roll back).
    BIZON_RETURN_IF_ERROR(
        connection_->Execute(fmt::format("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} BIGINT",
                                         Qualified(table.name), kLoadIdColumn)));
  }
  return connection_->Execute(
      fmt::format("INSERT INTO {} (load_id, job_id, table_name, staging_name, kind, rows)"
                  " VALUES (nextval({}), $1, $2, $3, 'track', 0)",
                  Qualified(kLoadLog), DuckQuoteLiteral(Qualified(kLoadSequence))),
      {sync_.job_id, table.name, table.staging});
}

// -----------------------------------------------------------------------------------------------
// Open: resume or start.

Status DuckdbDestination::RollBackUncommitted(TableState& table, int64_t committed_load) {
  BIZON_RETURN_IF_ERROR(connection_->Begin());
  Status rolled_back = [&]() -> Status {
    BIZON_ASSIGN_OR_RETURN(bool exists, TableExists(table.staging));
    if (!exists) {
      return DestinationError(
          StatusCode::kDataLoss,
          fmt::format("the table that job {} loads into was dropped outside bizon, with rows the "
                      "backend counts as written; reset the stream or start a fresh job: {}.{}",
                      sync_.job_id, schema_, table.staging));
    }
    std::string uncommitted = fmt::format(
        "SELECT load_id FROM {} WHERE job_id = $1 AND table_name = $2 AND kind = 'write'"
        " AND load_id > $3",
        Qualified(kLoadLog));
    BIZON_ASSIGN_OR_RETURN(
        std::optional<std::string> removed,
        connection_->QueryValue(
            fmt::format("DELETE FROM {} WHERE {} > $3 AND {} IN ({})", Qualified(table.staging),
                        kLoadIdColumn, kLoadIdColumn, uncommitted),
            {sync_.job_id, table.name, committed_load}));
    if (table.merges_continuously()) {
      // The cursor may have been recorded and the run killed before its merge: apply it now
      // (ApplyMerge() forgets the loads it applies).
      if (auto merged = ApplyMerge(table, committed_load); !merged) return merged.error();
    }
    // A stream job never ends, so its log would only grow: committed loads are final, drop them.
    std::vector<DuckParam> forget = {sync_.job_id, table.name};
    if (table.mode != SyncMode::kStream) forget.emplace_back(committed_load);
    BIZON_RETURN_IF_ERROR(connection_->Execute(
        fmt::format("DELETE FROM {} WHERE job_id = $1 AND table_name = $2 AND kind = 'write'{}",
                    Qualified(kLoadLog), forget.size() == 3 ? " AND load_id > $3" : ""),
        forget));
    BIZON_RETURN_IF_ERROR(connection_->Commit());
    if (ParseCount(removed) > 0) {
      spdlog::info(
          "DuckDB destination: removed {} rows of {}.{} written after the last committed cursor; "
          "they will be fetched again",
          *removed, schema_, table.staging);
    }
    return Status::Ok();
  }();
  if (!rolled_back.ok()) connection_->RollbackQuietly();
  return rolled_back;
}

Status DuckdbDestination::TrackDefaultTable() {
  // A fresh job: stage the default table now, so that a run with no rows still publishes an
  // empty table (and drops a stale staging table before the first load).
  if (unnest_ && !schemas_.contains(default_table_)) return Status::Ok();
  BIZON_ASSIGN_OR_RETURN(TableState * table, TableFor(default_table_));
  BIZON_RETURN_IF_ERROR(connection_->Begin());
  Status tracked = Track(*table);
  if (tracked.ok()) tracked = connection_->Commit();
  if (!tracked.ok()) {
    connection_->RollbackQuietly();
    return tracked;
  }
  table->tracked = true;
  return Status::Ok();
}

Status DuckdbDestination::Open(const Value& resume_state) {
  last_state_ = resume_state;
  BIZON_ASSIGN_OR_RETURN(std::shared_ptr<DuckDatabase> database,
                         DuckDatabase::Open(database_path_, FailureClass::kDestination));
  BIZON_ASSIGN_OR_RETURN(DuckConnection connection,
                         DuckConnection::Connect(std::move(database), FailureClass::kDestination));
  connection_.emplace(std::move(connection));
  // Strings without an offset are UTC, as in the other destinations, whatever the host's zone.
  BIZON_RETURN_IF_ERROR(connection_->Execute("SET TimeZone = 'UTC'"));
  // The appender needs no worker threads, and DuckDB would otherwise keep every block of the
  // table in memory (its default limit is most of the host's RAM): both bound the peak.
  BIZON_RETURN_IF_ERROR(connection_->Execute(
      fmt::format("SET threads = {}; SET memory_limit = '{}MB'", threads_, memory_limit_mb_)));
  quoted_schema_ = DuckQuoteIdentifier(schema_);
  BIZON_RETURN_IF_ERROR(EnsureLoadLog());

  std::optional<int64_t> committed;
  if (const Value* load = resume_state.is_map() ? resume_state.Find("load_id") : nullptr;
      load != nullptr && load->is_integer()) {
    committed = load->AsInteger();
  }
  BIZON_ASSIGN_OR_RETURN(
      DuckRows logged,
      connection_->Query(fmt::format("SELECT table_name, bool_or(kind = 'publish') FROM {}"
                                     " WHERE job_id = $1 GROUP BY table_name"
                                     " ORDER BY min(load_id)",
                                     Qualified(kLoadLog)),
                         {sync_.job_id}));
  if (logged.empty()) {
    if (committed) {
      return DestinationError(
          StatusCode::kDataLoss,
          fmt::format("the duckdb destination's load log has no entry for job {}, whose last "
                      "cursor records load {}; {}.{} in {} was changed outside bizon",
                      sync_.job_id, *committed, schema_, kLoadLog, database_path_));
    }
    return TrackDefaultTable();
  }
  // A resumed job: each table it touched goes back to the last load the backend recorded.
  for (const auto& row : logged) {
    BIZON_ASSIGN_OR_RETURN(TableState * table, TableFor(row[0].value_or("")));
    table->tracked = true;
    table->published = row[1].value_or("false") == "true";
    if (!table->published) {
      BIZON_RETURN_IF_ERROR(RollBackUncommitted(*table, committed.value_or(-1)));
    }
  }
  spdlog::info("DuckDB destination: resuming job {} after load {}", sync_.job_id,
               committed ? std::to_string(*committed) : std::string("none"));
  return Status::Ok();
}

// -----------------------------------------------------------------------------------------------
// Write.

Result<std::vector<std::pair<DuckdbDestination::TableState*, std::vector<size_t>>>>
DuckdbDestination::GroupByTable(const RecordBatch& records) {
  std::map<std::string, std::vector<size_t>, std::less<>> groups = RowsByDestination(records);
  // Every name is checked before the first row is appended.
  std::vector<std::pair<TableState*, std::vector<size_t>>> tables;
  for (auto& [id, rows] : groups) {
    std::string_view name = id.empty() ? std::string_view(default_table_) : id;
    BIZON_ASSIGN_OR_RETURN(TableState * table, TableFor(name));
    if (auto columns = ColumnsFor(name); !columns) return Fail(columns.error());
    if (table->published) {
      return Fail(InternalError(
          fmt::format("the duckdb destination was written after it published {}", name)));
    }
    tables.emplace_back(table, std::move(rows));
  }
  return tables;
}

Status DuckdbDestination::BeginLoad() {
  BIZON_RETURN_IF_ERROR(connection_->Begin());
  load_.emplace(OpenLoad{});
  BIZON_ASSIGN_OR_RETURN(std::optional<std::string> next,
                         connection_->QueryValue(fmt::format(
                             "SELECT nextval({})", DuckQuoteLiteral(Qualified(kLoadSequence)))));
  int64_t id = 0;
  std::string text = next.value_or("");
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (error != std::errc() || end != text.data() + text.size()) {
    return InternalError(fmt::format("the duckdb load id sequence returned '{}'", text));
  }
  load_->load_id = id;
  return Status::Ok();
}

Result<DuckAppender*> DuckdbDestination::AppenderFor(TableState& table) {
  if (auto found = load_->appenders.find(&table); found != load_->appenders.end()) {
    return &found->second;
  }
  bool tracking = std::find(load_->newly_tracked.begin(), load_->newly_tracked.end(), &table) !=
                  load_->newly_tracked.end();
  if (!table.tracked && !tracking) {
    BIZON_RETURN_IF_ERROR(Track(table));
    load_->newly_tracked.push_back(&table);
  }
  BIZON_ASSIGN_OR_RETURN(DuckAppender appender,
                         DuckAppender::Open(*connection_, schema_, table.staging));
  return &load_->appenders.emplace(&table, std::move(appender)).first->second;
}

Status DuckdbDestination::AppendRows(const RecordBatch& records, const std::vector<size_t>& rows,
                                     TableState& table, int64_t loaded_at_us) {
  BIZON_ASSIGN_OR_RETURN(DuckAppender * appender, AppenderFor(table));
  BIZON_ASSIGN_OR_RETURN(const std::vector<Column>* columns, ColumnsFor(table.name));
  RowEncoder& encoder = *encoder_;
  for (size_t i : rows) {
    if (unnest_) {
      BIZON_RETURN_IF_ERROR(encoder.Read(records.payload(i), records.id(i), table.name, *columns));
      encoder.AppendSlots(*appender);
    } else {
      appender->Text(NewUuidHex());
      appender->TimestampMicros(records.extracted_at_us(i));
      appender->TimestampMicros(loaded_at_us);
      appender->Text(records.id(i));
      appender->TimestampMicros(records.timestamp_us(i));
      appender->Text(records.payload(i));
    }
    appender->Int64(load_->load_id);
    if (table.merges()) {
      BIZON_ASSIGN_OR_RETURN(bool deleted, DeleteMark(records, i, table));
      appender->Int64(load_->next_seq++);
      appender->Bool(deleted);
    }
    if (Status ended = appender->EndRow(); !ended.ok()) {
      return ended.WithContext(
          fmt::format("record {} into {}", records.id(i), QuoteDestinationId(table.name)));
    }
  }
  load_->rows[&table] += static_cast<int64_t>(rows.size());
  return Status::Ok();
}

Result<Value> DuckdbDestination::Write(const RecordBatch& records, int64_t loaded_at_us) {
  if (load_) {
    return Fail(InternalError("the duckdb destination was written with an appended load open"));
  }
  BIZON_RETURN_IF_ERROR(Append(records, loaded_at_us));
  return Sync();
}

Status DuckdbDestination::Append(const RecordBatch& records, int64_t loaded_at_us) {
  if (!connection_) {
    return InternalError("the duckdb destination was written before it was opened");
  }
  Status appended = [&]() -> Status {
    BIZON_ASSIGN_OR_RETURN(auto groups, GroupByTable(records));
    if (!load_) BIZON_RETURN_IF_ERROR(BeginLoad());
    for (const auto& [table, rows] : groups) {
      BIZON_RETURN_IF_ERROR(AppendRows(records, rows, *table, loaded_at_us));
    }
    return Status::Ok();
  }();
  if (!appended.ok()) AbandonLoad();  // Rolls the whole load back: the run fails with it.
  return appended;
}

void DuckdbDestination::AbandonLoad() {
  if (!load_) return;
  load_.reset();  // The appenders go without flushing.
  if (connection_) connection_->RollbackQuietly();
}

Status DuckdbDestination::CommitLoad() {
  for (auto& [table, appender] : load_->appenders) {
    BIZON_RETURN_IF_ERROR(appender.Close());
  }
  for (const auto& [table, rows] : load_->rows) {
    BIZON_RETURN_IF_ERROR(connection_->Execute(
        fmt::format("INSERT INTO {} (load_id, job_id, table_name, staging_name, kind, rows)"
                    " VALUES ($1, $2, $3, $4, 'write', $5)",
                    Qualified(kLoadLog)),
        {load_->load_id, sync_.job_id, table->name, table->staging, rows}));
  }
  return connection_->Commit();
}

Result<Value> DuckdbDestination::Sync() {
  if (!load_) return last_state_;
  if (Status committed = CommitLoad(); !committed.ok()) {
    AbandonLoad();
    return Fail(committed);
  }
  for (TableState* table : load_->newly_tracked) table->tracked = true;
  last_state_ = Value(Value::Map{{"load_id", Value(load_->load_id)}});
  load_.reset();
  return last_state_;
}

// -----------------------------------------------------------------------------------------------
// Publish.

Result<int64_t> DuckdbDestination::SwapInStaging(const TableState& table) {
  BIZON_ASSIGN_OR_RETURN(
      std::optional<std::string> written,
      connection_->QueryValue(
          fmt::format("SELECT COALESCE(SUM(rows), 0) FROM {}"
                      " WHERE job_id = $1 AND table_name = $2 AND kind = 'write'",
                      Qualified(kLoadLog)),
          {sync_.job_id, table.name}));
  // The swap: one transaction, so a reader sees the old table or the new one, never a mix.
  BIZON_RETURN_IF_ERROR(connection_->Execute(fmt::format(
      "ALTER TABLE {0} DROP COLUMN {1}; DROP TABLE IF EXISTS {2}; ALTER TABLE {0} RENAME TO {3}",
      Qualified(table.staging), kLoadIdColumn, Qualified(table.name),
      DuckQuoteIdentifier(table.name))));
  return ParseCount(written);
}

Result<int64_t> DuckdbDestination::AppendStaging(const TableState& table,
                                                 const std::vector<Column>& columns) {
  std::string list = ColumnList(columns);
  BIZON_RETURN_IF_ERROR(connection_->Execute(fmt::format(
      "CREATE TABLE IF NOT EXISTS {} ({})", Qualified(table.name), ColumnDefinitions(columns))));
  BIZON_ASSIGN_OR_RETURN(std::optional<std::string> appended,
                         connection_->QueryValue(fmt::format(
                             "INSERT INTO {} ({}) SELECT {} FROM {}", Qualified(table.name), list,
                             list, Qualified(table.staging))));
  BIZON_RETURN_IF_ERROR(
      connection_->Execute(fmt::format("DROP TABLE {}", Qualified(table.staging))));
  return ParseCount(appended);
}

Status DuckdbDestination::Publish(TableState& table) {
  BIZON_ASSIGN_OR_RETURN(const std::vector<Column>* columns, ColumnsFor(table.name));
  BIZON_RETURN_IF_ERROR(connection_->Begin());
  Status published = [&]() -> Status {
    BIZON_ASSIGN_OR_RETURN(
        std::optional<std::string> already,
        connection_->QueryValue(fmt::format("SELECT count(*) FROM {} WHERE job_id = $1"
                                            " AND table_name = $2 AND kind = 'publish'",
                                            Qualified(kLoadLog)),
                                {sync_.job_id, table.name}));
    if (ParseCount(already) > 0) return connection_->Commit();
    BIZON_ASSIGN_OR_RETURN(bool exists, TableExists(table.staging));
    if (!exists) {
      return DestinationError(
          StatusCode::kDataLoss,
          fmt::format("the staging table vanished before it was published: {}.{}", schema_,
                      table.staging));
    }
    int64_t rows = 0;
    if (table.mode == SyncMode::kFullRefresh) {
      if (table.merges()) {
        BIZON_ASSIGN_OR_RETURN(rows, SwapInWinners(table, *columns));
      } else {
        BIZON_ASSIGN_OR_RETURN(rows, SwapInStaging(table));
      }
    } else if (table.merges()) {
      BIZON_RETURN_IF_ERROR(
          connection_->Execute(fmt::format("CREATE TABLE IF NOT EXISTS {} ({})",
                                           Qualified(table.name), ColumnDefinitions(*columns))));
      BIZON_ASSIGN_OR_RETURN(rows, ApplyMerge(table, std::nullopt));
      BIZON_RETURN_IF_ERROR(
          connection_->Execute(fmt::format("DROP TABLE {}", Qualified(table.staging))));
    } else {
      BIZON_ASSIGN_OR_RETURN(rows, AppendStaging(table, *columns));
    }
    BIZON_RETURN_IF_ERROR(connection_->Execute(
        fmt::format("INSERT INTO {} (load_id, job_id, table_name, staging_name, kind, rows)"
                    " VALUES (nextval({}), $1, $2, $3, 'publish', $4)",
                    Qualified(kLoadLog), DuckQuoteLiteral(Qualified(kLoadSequence))),
        {sync_.job_id, table.name, table.staging, rows}));
    BIZON_RETURN_IF_ERROR(connection_->Commit());
    spdlog::info("DuckDB destination: published {} rows into {}.{}", rows, schema_, table.name);
    return Status::Ok();
  }();
  if (!published.ok()) {
    connection_->RollbackQuietly();
    return published;
  }
  table.published = true;
  return Status::Ok();
}

Status DuckdbDestination::Finalize() {
  if (load_) return InternalError("the duckdb destination was finalized with a load open");
  if (sync_.sync_mode == SyncMode::kStream) return Status::Ok();  // Written in place.
  if (!connection_) {
    return InternalError("the duckdb destination was finalized before it was opened");
  }
  for (auto& [name, table] : tables_) {
    if (table.tracked && !table.published && table.mode != SyncMode::kStream) {
      BIZON_RETURN_IF_ERROR(Publish(table));
    }
  }
  return Status::Ok();
}

Status DuckdbDestination::OnJobSucceeded() {
  if (!connection_) return Status::Ok();
  // The job is over: its loads can no longer be rolled back. The publish rows stay as history.
  return connection_->Execute(
      fmt::format("DELETE FROM {} WHERE job_id = $1 AND kind <> 'publish'", Qualified(kLoadLog)),
      {sync_.job_id});
}

// -----------------------------------------------------------------------------------------------
// Merge.

namespace {

/// A JSON pointer ("/meta/deleted") of a field path ("deleted", "$.meta.deleted").
std::string FieldPointer(std::string_view path) {
  std::string dotted;
  for (const std::string& part : SplitFieldPath(path)) dotted += (dotted.empty() ? "" : ".") + part;
  return DottedPathToPointer(dotted);
}

bool IsRawColumn(std::string_view name) {
  return name == "_bizon_id" || name == "_bizon_extracted_at" || name == "_bizon_loaded_at" ||
         name == "_source_record_id" || name == "_source_timestamp" || name == "_source_data";
}

}  // namespace

Status DuckdbDestination::CheckPolicies() const {
  if (!unnest_) return Status::Ok();  // Raw keys are paths into _source_data.
  for (const auto& [id, columns] : schemas_) {
    const TablePolicy& policy = policies_.For(id);
    if (!policy.merges()) continue;
    auto declared = [&columns](std::string_view name) {
      return std::any_of(columns.begin(), columns.end(),
                         [name](const Column& column) { return SameName(column.name, name); });
    };
    for (const std::string& key : policy.primary_key) {
      if (!declared(key)) {
        return ConfigError(fmt::format(
            "destination.config.primary_key: '{}' is not a column of the record_schema of '{}'",
            key, id));
      }
    }
    if (policy.dedup_sort && !declared(policy.dedup_sort->column)) {
      return ConfigError(fmt::format(
          "destination.config.dedup_sort.column: '{}' is not a column of the record_schema of "
          "'{}'",
          policy.dedup_sort->column, id));
    }
  }
  return Status::Ok();
}

std::string DuckdbDestination::StagingDefinitions(const TableState& table,
                                                  const std::vector<Column>& columns) const {
  std::string definitions = fmt::format("{}, {} BIGINT", ColumnDefinitions(columns), kLoadIdColumn);
  if (table.merges()) {
    definitions += fmt::format(", {} BIGINT, {} BOOLEAN", kSequenceColumn, kDeletedColumn);
  }
  return definitions;
}

Result<bool> DuckdbDestination::DeleteMark(const RecordBatch& records, size_t index,
                                           const TableState& table) {
  const std::vector<std::string>& path = table.policy->hard_delete;
  if (path.empty()) return false;
  std::string_view payload = records.payload(index);
  simdjson::dom::element root;
  if (auto error = encoder_->dom_parser.parse(payload.data(), payload.size()).get(root)) {
    return Fail(RowEncoder::NotJson(records.id(index), error));
  }
  std::string dotted;
  for (const std::string& part : path) dotted += (dotted.empty() ? "" : ".") + part;
  simdjson::dom::element mark;
  if (root.at_pointer(DottedPathToPointer(dotted)).get(mark)) return false;  // No such field.
  std::string_view text;
  bool flag = false;
  return (!mark.get_bool().get(flag) && flag) ||
         (!mark.get_string().get(text) && IsDeleteMark(fmt::format("\"{}\"", text)));
}

std::string DuckdbDestination::KeyExpression(std::string_view alias, std::string_view key) const {
  std::string prefix = std::string(alias) + ".";
  if (unnest_ || IsRawColumn(key)) return prefix + DuckQuoteIdentifier(key);
  return fmt::format("json_extract_string({}_source_data, {})", prefix,
                     DuckQuoteLiteral(FieldPointer(key)));
}

std::string DuckdbDestination::WinnerQuery(const TableState& table,
                                           const std::vector<Column>& columns,
                                           std::string_view where) const {
  const TablePolicy& policy = *table.policy;
  std::string keys;
  for (const std::string& key : policy.primary_key) {
    if (!keys.empty()) keys += ", ";
    keys += KeyExpression("s", key);
  }
  std::string order = keys;
  if (policy.dedup_sort) {
    std::string direction = policy.dedup_sort->descending ? "DESC" : "ASC";
    std::string sort = KeyExpression("s", policy.dedup_sort->column);
    if (!unnest_ && !IsRawColumn(policy.dedup_sort->column)) {
      // A payload field: numbers compare as numbers, the rest as text.
      order += fmt::format(", TRY_CAST({} AS DOUBLE) {} NULLS LAST", sort, direction);
    }
    order += fmt::format(", {} {} NULLS LAST", sort, direction);
  }
  // Ties, and no dedup_sort: the record received last wins.
  order += fmt::format(", s.{} DESC, s.{} DESC", kLoadIdColumn, kSequenceColumn);
  std::string list;
  for (const Column& column : columns) {
    if (!list.empty()) list += ", ";
    list += "s." + DuckQuoteIdentifier(column.name);
  }
  return fmt::format(
      "SELECT DISTINCT ON ({}) {}, s.{}, s.rowid AS _bizon_row FROM {} s WHERE {} "
      "ORDER BY {}",
      keys, list, kDeletedColumn, Qualified(table.staging), where, order);
}

Result<int64_t> DuckdbDestination::ApplyMerge(const TableState& table,
                                              std::optional<int64_t> through_load) {
  BIZON_ASSIGN_OR_RETURN(const std::vector<Column>* columns, ColumnsFor(table.name));
  std::string where = "TRUE";
  if (through_load) {
    where = fmt::format(
        "s.{} IN (SELECT load_id FROM {} WHERE job_id = {} AND table_name = {} AND kind = 'write'"
        " AND load_id <= {})",
        kLoadIdColumn, Qualified(kLoadLog), DuckQuoteLiteral(sync_.job_id),
        DuckQuoteLiteral(table.name), *through_load);
  }
  std::string missing;
  std::string matches;
  for (const std::string& key : table.policy->primary_key) {
    missing += fmt::format("{}{} IS NULL", missing.empty() ? "" : " OR ", KeyExpression("s", key));
    matches += fmt::format(" AND {} = {}", KeyExpression("s", key),
                           KeyExpression(Qualified(table.name), key));
  }
  std::string staging = Qualified(table.staging);
  BIZON_ASSIGN_OR_RETURN(
      std::optional<std::string> keyless,
      connection_->QueryValue(
          fmt::format("SELECT count(*) FROM {} s WHERE ({}) AND ({})", staging, where, missing)));
  if (ParseCount(keyless) > 0) {
    return Fail(DestinationError(
        StatusCode::kInvalidArgument,
        fmt::format("{} records of {} have no value for a primary key column; a merge needs every "
                    "key",
                    ParseCount(keyless), QuoteDestinationId(table.name))));
  }
  // Every key the loads hold goes, then each key's winner comes back unless it deletes.
  BIZON_RETURN_IF_ERROR(connection_->Execute(
      fmt::format("DELETE FROM {0} WHERE EXISTS (SELECT 1 FROM {1} s WHERE ({2}){3})",
                  Qualified(table.name), staging, where, matches)));
  std::string list = ColumnList(*columns);
  BIZON_ASSIGN_OR_RETURN(
      std::optional<std::string> inserted,
      connection_->QueryValue(fmt::format(
          "INSERT INTO {} ({}) SELECT {} FROM ({}) w WHERE NOT w.{}", Qualified(table.name), list,
          list, WinnerQuery(table, *columns, where), kDeletedColumn)));
  if (through_load) {
    // Applied: neither applied again nor rolled back by a resume.
    BIZON_RETURN_IF_ERROR(connection_->Execute(
        fmt::format("DELETE FROM {} s WHERE {}; DELETE FROM {} WHERE job_id = {} AND table_name "
                    "= {} AND kind = 'write' AND load_id <= {}",
                    staging, where, Qualified(kLoadLog), DuckQuoteLiteral(sync_.job_id),
                    DuckQuoteLiteral(table.name), *through_load)));
  }
  return ParseCount(inserted);
}

Result<int64_t> DuckdbDestination::SwapInWinners(const TableState& table,
                                                 const std::vector<Column>& columns) {
  // Built anew from the winners rather than deleted from in place: DuckDB refuses to commit a
  // transaction that deletes from a table and then alters it.
  std::string list = ColumnList(columns);
  BIZON_RETURN_IF_ERROR(connection_->Execute(fmt::format(
      "DROP TABLE IF EXISTS {0}; CREATE TABLE {0} AS SELECT {1} FROM ({2}) w WHERE NOT w.{3};"
      " DROP TABLE {4}",
      Qualified(table.name), list, WinnerQuery(table, columns, "TRUE"), kDeletedColumn,
      Qualified(table.staging))));
  BIZON_ASSIGN_OR_RETURN(
      std::optional<std::string> rows,
      connection_->QueryValue(fmt::format("SELECT count(*) FROM {}", Qualified(table.name))));
  return ParseCount(rows);
}

Status DuckdbDestination::ApplyContinuousMerges(int64_t through_load) {
  std::vector<const TableState*> merging;
  for (const auto& [name, table] : tables_) {
    if (table.tracked && table.merges_continuously()) merging.push_back(&table);
  }
  if (merging.empty()) return Status::Ok();
  // Every table's merge in one transaction: readers see all of a cursor's changes or none.
  BIZON_RETURN_IF_ERROR(connection_->Begin());
  for (const TableState* table : merging) {
    if (auto merged = ApplyMerge(*table, through_load); !merged) {
      connection_->RollbackQuietly();
      return merged.error();
    }
  }
  if (Status committed = connection_->Commit(); !committed.ok()) {
    connection_->RollbackQuietly();
    return committed;
  }
  return Status::Ok();
}

Status DuckdbDestination::OnCursorRecorded(const Value& state) {
  const Value* load = state.is_map() ? state.Find("load_id") : nullptr;
  // With a load open, the next recorded cursor applies this one's loads too (they are covered).
  if (load == nullptr || !load->is_integer() || !connection_ || load_) return Status::Ok();
  return ApplyContinuousMerges(load->AsInteger());
}

// -----------------------------------------------------------------------------------------------
// Registration.

namespace {

/// What this destination does not do yet: change formats and schema contracts (postgres and
/// bigquery have them), refused with their line by `config validate`.
std::vector<ConfigRuleViolation> CheckDuckPolicies(const Value& config, SyncMode sync_mode) {
  std::vector<ConfigRuleViolation> violations = CheckTablePolicies(config, sync_mode);
  auto check_block = [&](const Value& block, const std::string& prefix) {
    std::string contract = block.GetString("schema_contract");
    if (!contract.empty()) {
      violations.push_back({.path = prefix + "schema_contract",
                            .message = "the duckdb destination has no schema contracts yet: a "
                                       "record's keys must be exactly the record_schema's"});
    }
    if (std::string format = block.GetString("change_format");
        !format.empty() && format != "none") {
      violations.push_back({.path = prefix + "change_format",
                            .message = "the duckdb destination does not read change events yet"});
    }
  };
  check_block(config, "");
  if (const Value* schemas = config.Find("record_schemas"); schemas && schemas->is_list()) {
    for (size_t i = 0; i < schemas->AsList().size(); ++i) {
      if (schemas->AsList()[i].is_map()) {
        check_block(schemas->AsList()[i], fmt::format("record_schemas[{}].", i));
      }
    }
  }
  return violations;
}

ConfigSpec DuckdbDestinationSpec() {
  ConfigSpec spec = {
      .fields = {{.name = "database",
                  .type = FieldType::kString,
                  .description = "The DuckDB database file (created when missing), relative to "
                                 "the working directory unless absolute. A duckdb backend naming "
                                 "the same file keeps the pipeline's state in it.",
                  .required = true},
                 {.name = "schema",
                  .type = FieldType::kString,
                  .description = "Schema of the tables; created when missing.",
                  .default_value = Value("main")},
                 {.name = "table",
                  .type = FieldType::kString,
                  .description = "Table to load into; defaults to destination_id, then the "
                                 "source and stream names joined by '_'."},
                 {.name = "threads",
                  .type = FieldType::kInteger,
                  .description = "DuckDB's worker threads for the file (the appender needs "
                                 "none; a merge or an incremental publish of many rows uses "
                                 "them).",
                  .default_value = Value(1),
                  .minimum = 1,
                  .maximum = 256},
                 {.name = "memory_limit_mb",
                  .type = FieldType::kInteger,
                  .description = "DuckDB's memory limit for the file, in MB; above it DuckDB "
                                 "evicts written blocks and spills to <database>.tmp. The "
                                 "process's peak is about this plus the open load's rows.",
                  .default_value = Value(256),
                  .minimum = 64}},
      .unknown_keys = UnknownKeys::kError};
  // Not change_format and schema_contract (CheckDuckPolicies refuses them in record_schemas).
  for (FieldSpec& field : WriteDispositionFields()) {
    if (field.name != "change_format" && field.name != "schema_contract") {
      spec.fields.push_back(std::move(field));
    }
  }
  return spec;
}

}  // namespace

Status RegisterDuckdbDestination(ConnectorRegistry& registry) {
  return registry.AddDestination({
      .name = "duckdb",
      .description = "Tables of a DuckDB database file, loaded with the appender; exactly-once "
                     "on resume.",
      .alias = "duckdb",
      .config = DuckdbDestinationSpec(),
      .check_destination_id = CheckDuckTableName,
      .check_config = CheckDuckPolicies,
      .destination_id_keys = {"table"},
      .factory = [](const DestinationContext& context) -> Result<std::unique_ptr<Destination>> {
        BIZON_ASSIGN_OR_RETURN(auto destination, DuckdbDestination::Create(context));
        return std::unique_ptr<Destination>(std::move(destination));
      },
  });
}

}  // namespace bizon
