#include "connectors/destinations/postgres/postgres_destination.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bizon/clock.h"
#include "connectors/destinations/destination_record.h"
#include "connectors/registration.h"

namespace bizon {
namespace {

// COPY data goes to the server in chunks of about this size: big enough that the per-call cost
// vanishes, small enough that a 50 MB buffer is never held twice.
constexpr size_t kCopyChunkBytes = 1 << 20;
// PostgreSQL truncates longer identifiers (NAMEDATALEN - 1), which would merge distinct names.
constexpr size_t kMaxIdentifierBytes = 63;
constexpr std::string_view kLoadIdColumn = "_bizon_load_id";
constexpr std::string_view kLoadLog = "_bizon_loads";
constexpr std::string_view kLoadSequence = "_bizon_load_id_seq";

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

/// "YYYY-MM-DD HH:MM:SS.ffffff+00", PostgreSQL's own timestamptz form, with the date and time
/// of the last second formatted kept: consecutive rows mostly share it.
class TimestampText {
 public:
  void Append(std::string& out, int64_t micros) {
    int64_t second = micros / 1'000'000;
    int64_t fraction = micros % 1'000'000;
    if (fraction < 0) {
      fraction += 1'000'000;
      second -= 1;
    }
    if (second != second_ || prefix_.empty()) {
      UtcTime t = SplitUtc(second * 1'000'000);
      prefix_ = fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}.", t.year, t.month, t.day, t.hour,
                            t.minute, t.second);
      second_ = second;
    }
    out.append(prefix_);
    char digits[6];
    for (int i = 5; i >= 0; --i) {
      digits[i] = static_cast<char>('0' + fraction % 10);
      fraction /= 10;
    }
    out.append(digits, sizeof(digits));
    out.append("+00");
  }

 private:
  int64_t second_ = 0;
  std::string prefix_;
};

}  // namespace

// -----------------------------------------------------------------------------------------------
// Types and COPY text.

std::optional<PgColumnType> ParsePgColumnType(std::string_view type) {
  std::string t = Upper(type);
  if (t == "STRING" || t == "TEXT" || t == "VARCHAR") return PgColumnType::kText;
  if (t == "INTEGER" || t == "INT" || t == "INT64" || t == "BIGINT") return PgColumnType::kBigint;
  if (t == "NUMBER" || t == "FLOAT" || t == "FLOAT64" || t == "DOUBLE") {
    return PgColumnType::kDouble;
  }
  if (t == "NUMERIC" || t == "DECIMAL" || t == "BIGNUMERIC") return PgColumnType::kNumeric;
  if (t == "BOOLEAN" || t == "BOOL") return PgColumnType::kBoolean;
  if (t == "TIMESTAMP" || t == "DATETIME" || t == "TIMESTAMPTZ") {
    return PgColumnType::kTimestamptz;
  }
  if (t == "DATE") return PgColumnType::kDate;
  if (t == "JSON" || t == "JSONB") return PgColumnType::kJsonb;
  return std::nullopt;
}

std::string_view PgTypeName(PgColumnType type) {
  switch (type) {
    case PgColumnType::kText:
      return "text";
    case PgColumnType::kBigint:
      return "bigint";
    case PgColumnType::kDouble:
      return "double precision";
    case PgColumnType::kNumeric:
      return "numeric";
    case PgColumnType::kBoolean:
      return "boolean";
    case PgColumnType::kTimestamptz:
      return "timestamptz";
    case PgColumnType::kDate:
      return "date";
    case PgColumnType::kJsonb:
      return "jsonb";
  }
  return "text";
}

void AppendCopyText(std::string& out, std::string_view text) {
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    char escaped;
    switch (c) {
      case '\\':
        escaped = '\\';
        break;
      case '\t':
        escaped = 't';
        break;
      case '\n':
        escaped = 'n';
        break;
      case '\r':
        escaped = 'r';
        break;
      default:
        continue;
    }
    out.append(text.substr(start, i - start));
    out.push_back('\\');
    out.push_back(escaped);
    start = i + 1;
  }
  out.append(text.substr(start));
}

// -----------------------------------------------------------------------------------------------
// Row encoding.

struct PostgresDestination::RowEncoder {
  std::string chunk;
  std::string padded;
  simdjson::ondemand::parser parser;
  TimestampText extracted_at;
  TimestampText loaded_at;
  TimestampText source_timestamp;
  std::vector<std::string> slots;  // Unnest: one COPY field per column, in schema order.
  std::vector<char> present;
  std::mt19937_64 random{std::random_device{}()};
  pid_t seeded_for = getpid();

  /// A uuid4 as 32 hex characters: what NewUuidHex() makes, without its per-call getpid().
  void AppendUuid(std::string& out) {
    uint64_t high = (random() & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // Version 4.
    uint64_t low = (random() & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;   // Variant.
    static constexpr char kHex[] = "0123456789abcdef";
    char text[32];
    for (int i = 15; i >= 0; --i) {
      text[i] = kHex[high & 0xf];
      high >>= 4;
    }
    for (int i = 31; i >= 16; --i) {
      text[i] = kHex[low & 0xf];
      low >>= 4;
    }
    out.append(text, sizeof(text));
  }

  /// Called once per Write(): a forked child must not repeat its parent's ids.
  void ReseedAfterFork() {
    if (seeded_for != getpid()) {
      random.seed(std::random_device{}());
      seeded_for = getpid();
    }
  }

  /// One JSON value as the COPY field of a column of `type`. Scalars keep their JSON spelling
  /// (numbers are never re-rounded); a string is unescaped, except for a jsonb column.
  static Status EncodeValue(simdjson::ondemand::value value, PgColumnType type, std::string& out,
                            bool& is_null) {
    simdjson::ondemand::json_type json_type;
    if (auto error = value.type().get(json_type)) {
      return DestinationError(StatusCode::kInvalidArgument, simdjson::error_message(error));
    }
    is_null = false;
    switch (json_type) {
      case simdjson::ondemand::json_type::null:
        is_null = true;
        return Status::Ok();
      case simdjson::ondemand::json_type::string: {
        if (type == PgColumnType::kJsonb) {
          AppendCopyText(out, TrimRight(value.raw_json_token()));
          return Status::Ok();
        }
        std::string_view text;
        if (auto error = value.get_string().get(text)) {
          return DestinationError(StatusCode::kInvalidArgument, simdjson::error_message(error));
        }
        AppendCopyText(out, text);
        return Status::Ok();
      }
      case simdjson::ondemand::json_type::boolean: {
        bool flag = false;
        if (auto error = value.get_bool().get(flag)) {
          return DestinationError(StatusCode::kInvalidArgument, simdjson::error_message(error));
        }
        out.append(flag ? "true" : "false");
        return Status::Ok();
      }
      case simdjson::ondemand::json_type::number:
        out.append(TrimRight(value.raw_json_token()));
        return Status::Ok();
      case simdjson::ondemand::json_type::object: {
        simdjson::ondemand::object object;
        std::string_view raw;
        if (auto error = value.get_object().get(object)) {
          return DestinationError(StatusCode::kInvalidArgument, simdjson::error_message(error));
        }
        if (auto error = object.raw_json().get(raw)) {
          return DestinationError(StatusCode::kInvalidArgument, simdjson::error_message(error));
        }
        AppendCopyText(out, raw);
        return Status::Ok();
      }
      case simdjson::ondemand::json_type::array: {
        simdjson::ondemand::array array;
        std::string_view raw;
        if (auto error = value.get_array().get(array)) {
          return DestinationError(StatusCode::kInvalidArgument, simdjson::error_message(error));
        }
        if (auto error = array.raw_json().get(raw)) {
          return DestinationError(StatusCode::kInvalidArgument, simdjson::error_message(error));
        }
        AppendCopyText(out, raw);
        return Status::Ok();
      }
    }
    return Status::Ok();
  }

  /// Appends the record's values in the order of `columns` (tab-separated, no row end). As the
  /// file destination: the record's keys must be exactly the schema's.
  template <typename Columns>
  Status AppendUnnested(std::string& out, std::string_view payload, std::string_view record_id,
                        std::string_view table, const Columns& columns) {
    padded.assign(payload);
    padded.append(simdjson::SIMDJSON_PADDING, '\0');
    simdjson::ondemand::document document;
    if (auto error = parser.iterate(padded.data(), payload.size(), padded.size()).get(document)) {
      return DestinationError(StatusCode::kInvalidArgument,
                              fmt::format("record {} is not valid JSON: {}", record_id,
                                          simdjson::error_message(error)));
    }
    simdjson::ondemand::object object;
    if (document.get_object().get(object)) {
      return DestinationError(StatusCode::kInvalidArgument,
                              fmt::format("record {} is not a JSON object", record_id));
    }
    slots.resize(columns.size());
    present.assign(columns.size(), 0);
    for (std::string& slot : slots) slot.clear();
    size_t seen = 0;
    for (auto field_result : object) {
      simdjson::ondemand::field field;
      std::string_view key;
      if (auto error = std::move(field_result).get(field)) {
        return DestinationError(StatusCode::kInvalidArgument,
                                fmt::format("record {} is not valid JSON: {}", record_id,
                                            simdjson::error_message(error)));
      }
      if (auto error = field.unescaped_key().get(key)) {
        return DestinationError(StatusCode::kInvalidArgument,
                                fmt::format("record {} is not valid JSON: {}", record_id,
                                            simdjson::error_message(error)));
      }
      size_t index = 0;
      while (index < columns.size() && columns[index].name != key) ++index;
      if (index == columns.size()) {
        return DestinationError(
            StatusCode::kInvalidArgument,
            fmt::format("record {} has key '{}', which the record_schema of '{}' does not declare",
                        record_id, key, table));
      }
      if (present[index] != 0) {
        return DestinationError(StatusCode::kInvalidArgument,
                                fmt::format("record {} has key '{}' twice", record_id, key));
      }
      bool is_null = false;
      Status encoded = EncodeValue(field.value(), columns[index].type, slots[index], is_null);
      if (!encoded.ok()) {
        return encoded.WithContext(fmt::format("record {} key '{}'", record_id, key));
      }
      if (is_null) slots[index] = "\\N";
      present[index] = 1;
      ++seen;
    }
    if (seen != columns.size()) {
      size_t missing = 0;
      while (present[missing] != 0) ++missing;
      return DestinationError(
          StatusCode::kInvalidArgument,
          fmt::format("record {} has no key '{}' declared in the record_schema of '{}'", record_id,
                      columns[missing].name, table));
    }
    for (size_t i = 0; i < slots.size(); ++i) {
      if (i != 0) out.push_back('\t');
      out.append(slots[i]);
    }
    return Status::Ok();
  }
};

// -----------------------------------------------------------------------------------------------
// Construction.

PostgresDestination::PostgresDestination(const DestinationContext& context)
    : sync_(context.sync),
      connection_settings_(PgSettingsFromConfig(context.config)),
      schema_(context.config.GetString("schema", "public")),
      unnest_(context.config.GetBool("unnest", false)),
      encoder_(std::make_unique<RowEncoder>()) {
  connection_settings_.application_name = "bizon destination";
  raw_columns_ = {{"_bizon_id", PgColumnType::kText},
                  {"_bizon_extracted_at", PgColumnType::kTimestamptz},
                  {"_bizon_loaded_at", PgColumnType::kTimestamptz},
                  {"_source_record_id", PgColumnType::kText},
                  {"_source_timestamp", PgColumnType::kTimestamptz},
                  {"_source_data", PgColumnType::kJsonb}};
}

PostgresDestination::~PostgresDestination() = default;

Result<std::unique_ptr<PostgresDestination>> PostgresDestination::Create(
    const DestinationContext& context) {
  std::unique_ptr<PostgresDestination> destination(new PostgresDestination(context));
  if (destination->schema_.empty()) destination->schema_ = "public";
  if (const Value* schemas = context.config.Find("record_schemas");
      schemas != nullptr && schemas->is_list()) {
    for (const Value& schema : schemas->AsList()) {
      std::string id = schema.GetString("destination_id");
      std::vector<Column> columns;
      if (const Value* list = schema.Find("record_schema"); list != nullptr && list->is_list()) {
        for (const Value& column : list->AsList()) {
          std::string name = column.GetString("name");
          std::string type = column.GetString("type");
          std::optional<PgColumnType> parsed = ParsePgColumnType(type);
          if (!parsed) {
            return Fail(ConfigError(fmt::format(
                "destination.config.record_schemas: column '{}' of '{}' has type '{}', which the "
                "postgres destination cannot store; use string, integer, number, numeric, "
                "boolean, timestamp, date or json",
                name, id, type)));
          }
          if (name.empty() || name.size() > kMaxIdentifierBytes) {
            return Fail(ConfigError(fmt::format(
                "destination.config.record_schemas: a column name of '{}' is empty or longer "
                "than {} bytes: '{}'",
                id, kMaxIdentifierBytes, name)));
          }
          columns.push_back({name, *parsed});
        }
      }
      destination->schemas_[id] = std::move(columns);
    }
  }
  std::string table = context.config.GetString("table");
  if (table.empty()) table = context.config.GetString("destination_id");
  if (table.empty() && destination->unnest_ && destination->schemas_.size() == 1) {
    table = destination->schemas_.begin()->first;  // The one schema names the one table.
  }
  if (table.empty()) table = context.sync.source_name + "_" + context.sync.stream_name;
  destination->default_table_ = table;
  // Fails early on a name that cannot be staged (`config validate` reports it with its line).
  if (auto staged = destination->TableFor(table); !staged) {
    return Fail(staged.error().WithFailureClass(FailureClass::kConfig));
  }
  return destination;
}

// -----------------------------------------------------------------------------------------------
// Names and DDL.

Status CheckPostgresTableName(std::string_view table, SyncMode sync_mode) {
  BIZON_RETURN_IF_ERROR(CheckDestinationIdCharacters(table));
  if (table == kLoadLog || table == kLoadSequence) {
    return DestinationError(
        StatusCode::kInvalidArgument,
        fmt::format("a destination id must not name the postgres destination's own bookkeeping "
                    "table or sequence: {}",
                    QuoteDestinationId(table)));
  }
  if (std::string staging = StagingTableName(table, sync_mode);
      staging.size() > kMaxIdentifierBytes) {
    return DestinationError(
        StatusCode::kInvalidArgument,
        fmt::format("a destination id is too long for a postgres table: PostgreSQL keeps {} bytes "
                    "of a name and cuts the rest, which would merge names that differ after it, "
                    "and the table it loads into ({}) needs {} bytes: {}",
                    kMaxIdentifierBytes, staging == table ? "itself" : "its staging table",
                    staging.size(), QuoteDestinationId(table)));
  }
  return Status::Ok();
}

std::string PostgresDestination::Qualified(std::string_view table) const {
  return quoted_schema_ + "." + connection_->QuoteIdentifier(table);
}

Result<PostgresDestination::TableState*> PostgresDestination::TableFor(
    std::string_view table_name) {
  if (auto found = tables_.find(table_name); found != tables_.end()) return &found->second;
  BIZON_RETURN_IF_ERROR(CheckPostgresTableName(table_name, sync_.sync_mode));
  std::string staging = StagingTableName(table_name, sync_.sync_mode);
  for (const auto& [name, other] : tables_) {
    // `x` stages into `x_temp`, the table of the id `x_temp`: publishing one would drop the other.
    if (other.staging == table_name || other.name == staging) {
      return Fail(DestinationError(
          StatusCode::kInvalidArgument,
          fmt::format("two destination ids of one job would share a postgres table (one's "
                      "staging table is the other's table): {} and {}",
                      QuoteDestinationId(table_name), QuoteDestinationId(name))));
    }
  }
  TableState state{.name = std::string(table_name), .staging = std::move(staging)};
  return &tables_.emplace(state.name, std::move(state)).first->second;
}

Result<const std::vector<PostgresDestination::Column>*> PostgresDestination::ColumnsFor(
    std::string_view table_name) const {
  if (!unnest_) return &raw_columns_;
  auto schema = schemas_.find(table_name);
  if (schema == schemas_.end()) {
    return Fail(DestinationError(
        StatusCode::kInvalidArgument,
        fmt::format("unnest is on but record_schemas has no entry for destination_id '{}'",
                    table_name)));
  }
  return &schema->second;
}

std::string PostgresDestination::ColumnDefinitions(const std::vector<Column>& columns) const {
  std::string definitions;
  for (const Column& column : columns) {
    if (!definitions.empty()) definitions += ", ";
    definitions += connection_->QuoteIdentifier(column.name);
    definitions += ' ';
    definitions += PgTypeName(column.type);
  }
  return definitions;
}

std::string PostgresDestination::ColumnList(const std::vector<Column>& columns) const {
  std::string list;
  for (const Column& column : columns) {
    if (!list.empty()) list += ", ";
    list += connection_->QuoteIdentifier(column.name);
  }
  return list;
}

Status PostgresDestination::LockTable(std::string_view table) {
  // Serialises bizon's DDL on one table across pipelines and processes (CREATE ... IF NOT EXISTS
  // is not safe against a concurrent create); released at COMMIT.
  return connection_->Run("SELECT pg_advisory_xact_lock($1)", "lock the destination table",
                          AdvisoryLockKey(fmt::format("bizon.table\x1f{}\x1f{}", schema_, table)));
}

Status PostgresDestination::EnsureLoadLog() {
  BIZON_ASSIGN_OR_RETURN(
      PgResult exists,
      connection_->Query("SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL",
                         "look up the load log", Qualified(kLoadLog), Qualified(kLoadSequence)));
  if (exists.Bool(0, 0)) return Status::Ok();
  BIZON_ASSIGN_OR_RETURN(PgTransaction transaction, PgTransaction::Begin(*connection_));
  BIZON_RETURN_IF_ERROR(connection_->Run("SELECT pg_advisory_xact_lock($1)",
                                         "lock the destination schema",
                                         AdvisoryLockKey("bizon.destination\x1f" + schema_)));
  // Checked before creating: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege on the
  // database even when the schema exists.
  BIZON_ASSIGN_OR_RETURN(PgResult found,
                         connection_->Query("SELECT 1 FROM pg_namespace WHERE nspname = $1",
                                            "look up the destination schema", schema_));
  if (found.rows() == 0) {
    BIZON_RETURN_IF_ERROR(
        connection_->Run(fmt::format("CREATE SCHEMA IF NOT EXISTS {}", quoted_schema_),
                         "create the destination schema"));
  }
  BIZON_RETURN_IF_ERROR(
      connection_->Run(fmt::format("CREATE SEQUENCE IF NOT EXISTS {}", Qualified(kLoadSequence)),
                       "create the load id sequence"));
  BIZON_RETURN_IF_ERROR(connection_->Run(
      fmt::format("CREATE TABLE IF NOT EXISTS {} ("
                  " load_id BIGINT NOT NULL,"
                  " job_id TEXT NOT NULL,"
                  " table_name TEXT NOT NULL,"
                  " staging_name TEXT NOT NULL,"
                  " kind TEXT NOT NULL CHECK (kind IN ('track', 'write', 'publish')),"
                  " rows BIGINT NOT NULL,"
                  " created_at TIMESTAMPTZ NOT NULL DEFAULT now(),"
                  " PRIMARY KEY (load_id, table_name))",
                  Qualified(kLoadLog)),
      "create the load log"));
  BIZON_RETURN_IF_ERROR(connection_->Run(
      fmt::format("CREATE INDEX IF NOT EXISTS _bizon_loads_by_job ON {} (job_id, table_name)",
                  Qualified(kLoadLog)),
      "index the load log"));
  return transaction.Commit();
}

Status PostgresDestination::Track(TableState& table) {
  BIZON_ASSIGN_OR_RETURN(const std::vector<Column>* columns, ColumnsFor(table.name));
  BIZON_RETURN_IF_ERROR(LockTable(table.name));
  std::string definitions = ColumnDefinitions(*columns);
  if (sync_.sync_mode != SyncMode::kStream) {
    // Whatever is staged belongs to an abandoned job, whose rows will be fetched again.
    BIZON_RETURN_IF_ERROR(
        connection_->Run(fmt::format("DROP TABLE IF EXISTS {}", Qualified(table.staging)),
                         "drop a stale staging table"));
    BIZON_RETURN_IF_ERROR(
        connection_->Run(fmt::format("CREATE TABLE {} ({}, {} BIGINT)", Qualified(table.staging),
                                     definitions, kLoadIdColumn),
                         "create the staging table"));
    BIZON_RETURN_IF_ERROR(connection_->Run(
        fmt::format("DELETE FROM {} WHERE table_name = $1 AND staging_name = $2"
                    " AND kind <> 'publish' AND job_id <> $3",
                    Qualified(kLoadLog)),
        "forget the loads of an abandoned job", table.name, table.staging, sync_.job_id));
  } else {
    std::string qualified = Qualified(table.name);
    BIZON_RETURN_IF_ERROR(
        connection_->Run(fmt::format("CREATE TABLE IF NOT EXISTS {} ({}, {} BIGINT)", qualified,
                                     definitions, kLoadIdColumn),
                         "create the destination table"));
    // A table made by a full refresh or by hand lacks the load column; add it (existing rows
    // keep NULL: they belong to no load this destination could roll back).
    BIZON_ASSIGN_OR_RETURN(
        PgResult has_column,
        connection_->Query("SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1)"
                           " AND attname = $2 AND NOT attisdropped",
                           "look up the load column", qualified, kLoadIdColumn));
    if (has_column.rows() == 0) {
      BIZON_RETURN_IF_ERROR(
          connection_->Run(fmt::format("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} BIGINT",
                                       qualified, kLoadIdColumn),
                           "add the load column"));
    }
    // BRIN: tiny, and load ids grow with the table's physical order, so the rollback of a
    // resumed stream job reads only the table's tail.
    std::string index =
        fmt::format("_bizon_load_{:016x}", static_cast<uint64_t>(AdvisoryLockKey(table.name)));
    BIZON_RETURN_IF_ERROR(
        connection_->Run(fmt::format("CREATE INDEX IF NOT EXISTS {} ON {} USING brin ({})",
                                     connection_->QuoteIdentifier(index), qualified, kLoadIdColumn),
                         "index the load column"));
  }
  return connection_->Run(
      fmt::format("INSERT INTO {} (load_id, job_id, table_name, staging_name, kind, rows)"
                  " VALUES (nextval($1::regclass), $2, $3, $4, 'track', 0)",
                  Qualified(kLoadLog)),
      "log the destination table", Qualified(kLoadSequence), sync_.job_id, table.name,
      table.staging);
}

// -----------------------------------------------------------------------------------------------
// Open: resume or start.

Status PostgresDestination::RollBackUncommitted(TableState& table, int64_t committed_load) {
  BIZON_ASSIGN_OR_RETURN(PgTransaction transaction, PgTransaction::Begin(*connection_));
  BIZON_RETURN_IF_ERROR(LockTable(table.name));
  BIZON_ASSIGN_OR_RETURN(PgResult exists,
                         connection_->Query("SELECT to_regclass($1) IS NOT NULL",
                                            "look up the staging table", Qualified(table.staging)));
  if (!exists.Bool(0, 0)) {
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
      PgResult removed,
      connection_->Query(
          fmt::format("DELETE FROM {} WHERE {} > $3 AND {} IN ({})", Qualified(table.staging),
                      kLoadIdColumn, kLoadIdColumn, uncommitted),
          "remove rows written after the last committed cursor", sync_.job_id, table.name,
          committed_load));
  BIZON_RETURN_IF_ERROR(connection_->Run(
      fmt::format("DELETE FROM {} WHERE job_id = $1 AND table_name = $2 AND kind = 'write'"
                  " AND load_id > $3",
                  Qualified(kLoadLog)),
      "forget the loads after the last committed cursor", sync_.job_id, table.name,
      committed_load));
  if (sync_.sync_mode == SyncMode::kStream) {
    // A stream job never ends, so its log would only grow: committed loads are final, drop them.
    BIZON_RETURN_IF_ERROR(connection_->Run(
        fmt::format("DELETE FROM {} WHERE job_id = $1 AND table_name = $2 AND kind = 'write'"
                    " AND load_id <= $3",
                    Qualified(kLoadLog)),
        "forget the committed loads", sync_.job_id, table.name, committed_load));
  }
  BIZON_RETURN_IF_ERROR(transaction.Commit());
  if (removed.AffectedRows() > 0) {
    spdlog::info(
        "Postgres destination: removed {} rows of {}.{} written after the last "
        "committed cursor; they will be fetched again",
        removed.AffectedRows(), schema_, table.staging);
  }
  return Status::Ok();
}

Status PostgresDestination::Open(const Value& resume_state) {
  last_state_ = resume_state;
  BIZON_ASSIGN_OR_RETURN(connection_,
                         PgConnection::Connect(connection_settings_, FailureClass::kDestination));
  quoted_schema_ = connection_->QuoteIdentifier(schema_);
  BIZON_RETURN_IF_ERROR(EnsureLoadLog());

  std::optional<int64_t> committed;
  if (const Value* load = resume_state.is_map() ? resume_state.Find("load_id") : nullptr;
      load != nullptr && load->is_integer()) {
    committed = load->AsInteger();
  }
  BIZON_ASSIGN_OR_RETURN(
      PgResult logged,
      connection_->Query(fmt::format("SELECT table_name, bool_or(kind = 'publish') FROM {}"
                                     " WHERE job_id = $1 GROUP BY table_name"
                                     " ORDER BY min(load_id)",
                                     Qualified(kLoadLog)),
                         "read the job's load log", sync_.job_id));
  if (logged.rows() == 0) {
    if (committed) {
      return DestinationError(
          StatusCode::kDataLoss,
          fmt::format("the postgres destination's load log has no entry for job {}, whose last "
                      "cursor records load {}; {}.{} was changed outside bizon",
                      sync_.job_id, *committed, schema_, kLoadLog));
    }
    // A fresh job: stage the default table now, so that a run with no rows still publishes an
    // empty table (and drops a stale staging table before the first load).
    if (unnest_ && !schemas_.contains(default_table_)) return Status::Ok();
    BIZON_ASSIGN_OR_RETURN(TableState * table, TableFor(default_table_));
    BIZON_ASSIGN_OR_RETURN(PgTransaction transaction, PgTransaction::Begin(*connection_));
    BIZON_RETURN_IF_ERROR(Track(*table));
    BIZON_RETURN_IF_ERROR(transaction.Commit());
    table->tracked = true;
    return Status::Ok();
  }
  // A resumed job: each table it touched goes back to the last load the backend recorded.
  for (int row = 0; row < logged.rows(); ++row) {
    BIZON_ASSIGN_OR_RETURN(TableState * table, TableFor(logged.Text(row, 0)));
    table->tracked = true;
    table->published = logged.Bool(row, 1);
    if (!table->published) {
      BIZON_RETURN_IF_ERROR(RollBackUncommitted(*table, committed.value_or(-1)));
    }
  }
  spdlog::info("Postgres destination: resuming job {} after load {}", sync_.job_id,
               committed ? std::to_string(*committed) : std::string("none"));
  return Status::Ok();
}

// -----------------------------------------------------------------------------------------------
// Write.

Status PostgresDestination::AppendRows(const RecordBatch& records, const std::vector<size_t>& rows,
                                       const std::vector<Column>& columns, int64_t load_id,
                                       int64_t loaded_at_us) {
  RowEncoder& encoder = *encoder_;
  std::string load_text = std::to_string(load_id);
  std::string& out = encoder.chunk;
  out.clear();
  out.reserve(kCopyChunkBytes + 4096);
  for (size_t i : rows) {
    if (unnest_) {
      std::string_view table =
          records.destination_id(i).empty() ? default_table_ : records.destination_id(i);
      BIZON_RETURN_IF_ERROR(
          encoder.AppendUnnested(out, records.payload(i), records.id(i), table, columns));
    } else {
      encoder.AppendUuid(out);
      out.push_back('\t');
      encoder.extracted_at.Append(out, records.extracted_at_us(i));
      out.push_back('\t');
      encoder.loaded_at.Append(out, loaded_at_us);
      out.push_back('\t');
      AppendCopyText(out, records.id(i));
      out.push_back('\t');
      encoder.source_timestamp.Append(out, records.timestamp_us(i));
      out.push_back('\t');
      AppendCopyText(out, records.payload(i));
    }
    out.push_back('\t');
    out.append(load_text);
    out.push_back('\n');
    if (out.size() >= kCopyChunkBytes) {
      BIZON_RETURN_IF_ERROR(connection_->PutCopyData(out));
      out.clear();
    }
  }
  return connection_->PutCopyData(out);
}

Result<std::vector<std::pair<PostgresDestination::TableState*, std::vector<size_t>>>>
PostgresDestination::GroupByTable(const RecordBatch& records) {
  std::vector<std::pair<std::string_view, std::vector<size_t>>> groups;
  if (!records.has_destination_ids()) {
    std::vector<size_t> all(records.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    groups.emplace_back(default_table_, std::move(all));
  } else {
    for (size_t i = 0; i < records.size(); ++i) {
      std::string_view id = records.destination_id(i);
      if (id.empty()) id = default_table_;
      auto group = std::find_if(groups.begin(), groups.end(),
                                [&](const auto& entry) { return entry.first == id; });
      if (group == groups.end()) {
        groups.emplace_back(id, std::vector<size_t>());
        group = std::prev(groups.end());
      }
      group->second.push_back(i);
    }
  }
  // Every name is checked before the first statement: a refused id fails the write with
  // nothing of it sent, not even the staging tables of the batch's acceptable ids.
  std::vector<std::pair<TableState*, std::vector<size_t>>> tables;
  for (auto& [name, rows] : groups) {
    BIZON_ASSIGN_OR_RETURN(TableState * table, TableFor(name));
    if (table->published) {
      return Fail(InternalError(
          fmt::format("the postgres destination was written after it published {}", name)));
    }
    tables.emplace_back(table, std::move(rows));
  }
  return tables;
}

Result<Value> PostgresDestination::Write(const RecordBatch& records, int64_t loaded_at_us) {
  if (connection_ == nullptr) {
    return Fail(InternalError("the postgres destination was written before it was opened"));
  }
  if (load_) {
    return Fail(InternalError("the postgres destination was written with an appended load open"));
  }
  BIZON_RETURN_IF_ERROR(Append(records, loaded_at_us));
  return Sync();
}

Status PostgresDestination::EndAppendCopy() {
  if (!load_ || load_->copying == nullptr) return Status::Ok();
  TableState* table = std::exchange(load_->copying, nullptr);
  BIZON_ASSIGN_OR_RETURN(int64_t copied, connection_->EndCopy());
  auto counted = std::find_if(load_->rows.begin(), load_->rows.end(),
                              [&](const auto& entry) { return entry.first == table; });
  if (counted == load_->rows.end()) {
    load_->rows.emplace_back(table, copied);
  } else {
    counted->second += copied;
  }
  return Status::Ok();
}

Status PostgresDestination::Append(const RecordBatch& records, int64_t loaded_at_us) {
  if (connection_ == nullptr) {
    return InternalError("the postgres destination was written before it was opened");
  }
  encoder_->ReseedAfterFork();
  Status appended = [&]() -> Status {
    BIZON_ASSIGN_OR_RETURN(auto groups, GroupByTable(records));
    if (!load_) {
      BIZON_ASSIGN_OR_RETURN(PgTransaction transaction, PgTransaction::Begin(*connection_));
      BIZON_ASSIGN_OR_RETURN(
          PgResult next, connection_->Query("SELECT nextval($1::regclass)", "allocate a load id",
                                            Qualified(kLoadSequence)));
      load_.emplace(OpenLoad{.transaction = std::move(transaction), .load_id = next.Int64(0, 0)});
    }
    for (const auto& [table, rows] : groups) {
      BIZON_ASSIGN_OR_RETURN(const std::vector<Column>* columns, ColumnsFor(table->name));
      if (load_->copying != table) {
        BIZON_RETURN_IF_ERROR(EndAppendCopy());
        bool tracking = std::find(load_->newly_tracked.begin(), load_->newly_tracked.end(),
                                  table) != load_->newly_tracked.end();
        if (!table->tracked && !tracking) {
          BIZON_RETURN_IF_ERROR(Track(*table));
          load_->newly_tracked.push_back(table);
        }
        BIZON_RETURN_IF_ERROR(connection_->BeginCopy(
            fmt::format("COPY {} ({}, {}) FROM STDIN", Qualified(table->staging),
                        ColumnList(*columns), kLoadIdColumn),
            "load rows with COPY"));
        load_->copying = table;
      }
      BIZON_RETURN_IF_ERROR(AppendRows(records, rows, *columns, load_->load_id, loaded_at_us));
    }
    return Status::Ok();
  }();
  if (!appended.ok()) load_.reset();  // Rolls the whole load back: the run fails with it.
  return appended;
}

Result<Value> PostgresDestination::Sync() {
  if (!load_) return last_state_;
  Status committed = [&]() -> Status {
    BIZON_RETURN_IF_ERROR(EndAppendCopy());
    for (const auto& [table, rows] : load_->rows) {
      BIZON_RETURN_IF_ERROR(connection_->Run(
          fmt::format("INSERT INTO {} (load_id, job_id, table_name, staging_name, kind, rows)"
                      " VALUES ($1, $2, $3, $4, 'write', $5)",
                      Qualified(kLoadLog)),
          "log the load", load_->load_id, sync_.job_id, table->name, table->staging, rows));
    }
    return load_->transaction.Commit();
  }();
  if (!committed.ok()) {
    load_.reset();
    return Fail(committed);
  }
  for (TableState* table : load_->newly_tracked) table->tracked = true;
  last_state_ = Value(Value::Map{{"load_id", Value(load_->load_id)}});
  load_.reset();
  return last_state_;
}

// -----------------------------------------------------------------------------------------------
// Publish.

Status PostgresDestination::Publish(TableState& table) {
  BIZON_ASSIGN_OR_RETURN(const std::vector<Column>* columns, ColumnsFor(table.name));
  BIZON_ASSIGN_OR_RETURN(PgTransaction transaction, PgTransaction::Begin(*connection_));
  BIZON_RETURN_IF_ERROR(LockTable(table.name));
  BIZON_ASSIGN_OR_RETURN(
      PgResult already,
      connection_->Query(fmt::format("SELECT 1 FROM {} WHERE job_id = $1 AND table_name = $2"
                                     " AND kind = 'publish'",
                                     Qualified(kLoadLog)),
                         "look up the publish", sync_.job_id, table.name));
  if (already.rows() == 0) {
    BIZON_ASSIGN_OR_RETURN(
        PgResult exists, connection_->Query("SELECT to_regclass($1) IS NOT NULL",
                                            "look up the staging table", Qualified(table.staging)));
    if (!exists.Bool(0, 0)) {
      return DestinationError(
          StatusCode::kDataLoss,
          fmt::format("the staging table vanished before it was published: {}.{}", schema_,
                      table.staging));
    }
    std::string main = Qualified(table.name);
    std::string staging = Qualified(table.staging);
    int64_t rows = 0;
    if (sync_.sync_mode == SyncMode::kFullRefresh) {
      BIZON_ASSIGN_OR_RETURN(
          PgResult written,
          connection_->Query(fmt::format("SELECT COALESCE(SUM(rows), 0)::bigint FROM {}"
                                         " WHERE job_id = $1 AND table_name = $2"
                                         " AND kind = 'write'",
                                         Qualified(kLoadLog)),
                             "count the staged rows", sync_.job_id, table.name));
      rows = written.Int64(0, 0);
      // The swap: one transaction, so a reader sees the old table or the new one, never a mix.
      BIZON_RETURN_IF_ERROR(
          connection_->Run(fmt::format("ALTER TABLE {} DROP COLUMN {}", staging, kLoadIdColumn),
                           "drop the load column"));
      BIZON_RETURN_IF_ERROR(connection_->Run(fmt::format("DROP TABLE IF EXISTS {}", main),
                                             "drop the replaced table"));
      BIZON_RETURN_IF_ERROR(connection_->Run(fmt::format("ALTER TABLE {} RENAME TO {}", staging,
                                                         connection_->QuoteIdentifier(table.name)),
                                             "swap the staging table in"));
    } else {
      BIZON_RETURN_IF_ERROR(connection_->Run(
          fmt::format("CREATE TABLE IF NOT EXISTS {} ({})", main, ColumnDefinitions(*columns)),
          "create the destination table"));
      std::string list = ColumnList(*columns);
      BIZON_ASSIGN_OR_RETURN(PgResult appended,
                             connection_->Query(fmt::format("INSERT INTO {} ({}) SELECT {} FROM {}",
                                                            main, list, list, staging),
                                                "append the staged rows"));
      rows = appended.AffectedRows();
      BIZON_RETURN_IF_ERROR(
          connection_->Run(fmt::format("DROP TABLE {}", staging), "drop the staging table"));
    }
    BIZON_RETURN_IF_ERROR(connection_->Run(
        fmt::format("INSERT INTO {} (load_id, job_id, table_name, staging_name, kind, rows)"
                    " VALUES (nextval($1::regclass), $2, $3, $4, 'publish', $5)",
                    Qualified(kLoadLog)),
        "log the publish", Qualified(kLoadSequence), sync_.job_id, table.name, table.staging,
        rows));
    spdlog::info("Postgres destination: published {} rows into {}.{}", rows, schema_, table.name);
  }
  BIZON_RETURN_IF_ERROR(transaction.Commit());
  table.published = true;
  return Status::Ok();
}

Status PostgresDestination::Finalize() {
  if (load_) return InternalError("the postgres destination was finalized with a load open");
  if (sync_.sync_mode == SyncMode::kStream) return Status::Ok();  // Written in place.
  if (connection_ == nullptr) {
    return InternalError("the postgres destination was finalized before it was opened");
  }
  for (auto& [name, table] : tables_) {
    if (table.tracked && !table.published) BIZON_RETURN_IF_ERROR(Publish(table));
  }
  return Status::Ok();
}

Status PostgresDestination::OnJobSucceeded() {
  if (connection_ == nullptr) return Status::Ok();
  // The job is over: its loads can no longer be rolled back. The publish rows stay as history.
  return connection_->Run(
      fmt::format("DELETE FROM {} WHERE job_id = $1 AND kind <> 'publish'", Qualified(kLoadLog)),
      "forget the job's loads", sync_.job_id);
}

// -----------------------------------------------------------------------------------------------
// Registration.

namespace {

ConfigSpec PostgresDestinationSpec() {
  ConfigSpec spec = {.fields = {{.name = "host",
                                 .type = FieldType::kString,
                                 .description = "PostgreSQL host.",
                                 .default_value = Value("localhost")},
                                {.name = "port",
                                 .type = FieldType::kInteger,
                                 .description = "PostgreSQL port.",
                                 .default_value = Value(5432),
                                 .minimum = 1,
                                 .maximum = 65535},
                                {.name = "database",
                                 .type = FieldType::kString,
                                 .description = "Database to load into.",
                                 .required = true},
                                {.name = "schema",
                                 .type = FieldType::kString,
                                 .description = "Schema of the tables; created when missing.",
                                 .default_value = Value("public")},
                                {.name = "username",
                                 .type = FieldType::kString,
                                 .description = "PostgreSQL user.",
                                 .required = true},
                                {.name = "password",
                                 .type = FieldType::kString,
                                 .description = "PostgreSQL password; empty uses libpq's own "
                                                "sources (PGPASSWORD, ~/.pgpass).",
                                 .default_value = Value(""),
                                 .secret = true},
                                {.name = "table",
                                 .type = FieldType::kString,
                                 .description = "Table to load into; defaults to destination_id, "
                                                "then the source and stream names joined by '_'."}},
                     .unknown_keys = UnknownKeys::kError};
  std::vector<FieldSpec> tls = PgTlsFields();
  spec.fields.insert(spec.fields.end(), tls.begin(), tls.end());
  return spec;
}

}  // namespace

Status RegisterPostgresDestination(ConnectorRegistry& registry) {
  return registry.AddDestination({
      .name = "postgres",
      .description = "PostgreSQL tables, loaded with COPY; exactly-once on resume.",
      .alias = "postgres",
      .config = PostgresDestinationSpec(),
      // Each member's loads are logged under its own job, and Open() rolls back exactly those.
      .concurrent_members = true,
      .check_destination_id = CheckPostgresTableName,
      .destination_id_keys = {"table"},
      .factory = [](const DestinationContext& context) -> Result<std::unique_ptr<Destination>> {
        BIZON_ASSIGN_OR_RETURN(auto destination, PostgresDestination::Create(context));
        return std::unique_ptr<Destination>(std::move(destination));
      },
  });
}

}  // namespace bizon
