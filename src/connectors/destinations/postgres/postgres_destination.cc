#include "connectors/destinations/postgres/postgres_destination.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bizon/clock.h"
#include "bizon/config_spec.h"
#include "connectors/destinations/destination_options.h"
#include "connectors/destinations/destination_record.h"
#include "connectors/registration.h"
#include "http/json_page.h"

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
constexpr std::string_view kMergeStagingSuffix = "_merge";
constexpr std::string_view kRejectedSuffix = "__rejected";
// A merge row's position in its load and its delete flag, beside the load id in staging.
constexpr std::string_view kSequenceColumn = "_bizon_seq";
constexpr std::string_view kDeletedColumn = "_bizon_deleted";

std::string RejectedTableName(std::string_view table) {
  return std::string(table) + std::string(kRejectedSuffix);
}

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
  if (t == "NUMBER" || t == "FLOAT" || t == "FLOAT64" || t == "DOUBLE" || t == "DOUBLE PRECISION") {
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

  /// The kind of a value whose JSON type is `type`; a number counts as an integer when it fits
  /// a bigint exactly.
  static JsonKind KindOf(simdjson::ondemand::value& value, simdjson::ondemand::json_type type) {
    switch (type) {
      case simdjson::ondemand::json_type::null:
        return JsonKind::kNull;
      case simdjson::ondemand::json_type::string:
        return JsonKind::kString;
      case simdjson::ondemand::json_type::boolean:
        return JsonKind::kBoolean;
      case simdjson::ondemand::json_type::object:
        return JsonKind::kObject;
      case simdjson::ondemand::json_type::array:
        return JsonKind::kArray;
      case simdjson::ondemand::json_type::number:
        break;
    }
    std::string_view token = TrimRight(value.raw_json_token());
    int64_t integer = 0;
    auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), integer);
    return error == std::errc() && end == token.data() + token.size() ? JsonKind::kInteger
                                                                      : JsonKind::kNumber;
  }

  /// Appends the record's values in the order of `columns` (tab-separated, no row end).
  /// Under SchemaContract::kExact the record's keys must be exactly the schema's, as the file
  /// destination wants them. Under a contract a missing key is NULL, and each value that does not
  /// fit (an unknown key, a value of another kind) is listed in `found`: with kDiscardValue
  /// it is written as NULL and the row appended; otherwise a row with problems is not appended.
  template <typename Columns>
  Status AppendUnnested(std::string& out, std::string_view payload, std::string_view record_id,
                        std::string_view table, const Columns& columns, SchemaContract contract,
                        std::vector<FitProblem>& found) {
    found.clear();
    simdjson::ondemand::object object;
    BIZON_RETURN_IF_ERROR(ParseObject(payload, record_id, object));
    slots.resize(columns.size());
    present.assign(columns.size(), 0);
    for (std::string& slot : slots) slot.clear();
    bool exact = contract == SchemaContract::kExact;
    for (auto field_result : object) {
      simdjson::ondemand::field field;
      std::string_view key;
      if (auto error = std::move(field_result).get(field)) return NotJson(record_id, error);
      if (auto error = field.unescaped_key().get(key)) return NotJson(record_id, error);
      size_t index = 0;
      while (index < columns.size() && columns[index].name != key) ++index;
      if (index < columns.size() && present[index] != 0) {
        return DestinationError(StatusCode::kInvalidArgument,
                                fmt::format("record {} has key '{}' twice", record_id, key));
      }
      simdjson::ondemand::value value = field.value();
      if (!exact) {
        simdjson::ondemand::json_type type;
        if (auto error = value.type().get(type)) return NotJson(record_id, error);
        JsonKind kind = KindOf(value, type);
        if (index == columns.size()) {
          if (kind != JsonKind::kNull) {
            found.push_back({.column = std::string(key), .kind = kind});
          }
          continue;
        }
        if (PgFit fit = FitValue(columns[index].type, kind); fit != PgFit::kFits) {
          found.push_back({.column = std::string(key),
                           .kind = kind,
                           .column_type = columns[index].type,
                           .fit = fit});
          slots[index] = "\\N";
          present[index] = 1;
          continue;
        }
      } else if (index == columns.size()) {
        return DestinationError(
            StatusCode::kInvalidArgument,
            fmt::format("record {} has key '{}', which the record_schema of '{}' does not declare",
                        record_id, key, table));
      }
      bool is_null = false;
      Status encoded = EncodeValue(value, columns[index].type, slots[index], is_null);
      if (!encoded.ok()) {
        return encoded.WithContext(fmt::format("record {} key '{}'", record_id, key));
      }
      if (is_null) slots[index] = "\\N";
      present[index] = 1;
    }
    if (!found.empty() && contract != SchemaContract::kDiscardValue) return Status::Ok();
    for (size_t i = 0; i < slots.size(); ++i) {
      if (present[i] != 0) continue;
      if (exact) {
        return DestinationError(
            StatusCode::kInvalidArgument,
            fmt::format("record {} has no key '{}' declared in the record_schema of '{}'",
                        record_id, columns[i].name, table));
      }
      slots[i] = "\\N";
    }
    for (size_t i = 0; i < slots.size(); ++i) {
      if (i != 0) out.push_back('\t');
      out.append(slots[i]);
    }
    return Status::Ok();
  }

  static Status NotJson(std::string_view record_id, simdjson::error_code error) {
    return DestinationError(
        StatusCode::kInvalidArgument,
        fmt::format("record {} is not valid JSON: {}", record_id, simdjson::error_message(error)));
  }

  Status ParseObject(std::string_view payload, std::string_view record_id,
                     simdjson::ondemand::object& object) {
    padded.assign(payload);
    padded.append(simdjson::SIMDJSON_PADDING, '\0');
    if (auto error = parser.iterate(padded.data(), payload.size(), padded.size()).get(document)) {
      return NotJson(record_id, error);
    }
    if (document.get_object().get(object)) {
      return DestinationError(StatusCode::kInvalidArgument,
                              fmt::format("record {} is not a JSON object", record_id));
    }
    return Status::Ok();
  }

  simdjson::ondemand::document document;
  /// Change formats, hard_delete paths and raw-mode keys: a DOM of the record, and the row a
  /// change event carries, minified.
  simdjson::dom::parser dom_parser;
  std::string shaped_row;
  std::vector<FitProblem> problems;
};

// -----------------------------------------------------------------------------------------------
// Construction.

namespace {

/// The destination's options, declared once (below): the registry's spec and Create() use it.
ConfigSpec PostgresDestinationSpec();

}  // namespace

PostgresDestination::PostgresDestination(const DestinationContext& context)
    : sync_(context.sync),
      connection_settings_(PgSettingsFromConfig(context.config)),
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
  BIZON_ASSIGN_OR_RETURN(
      TableOptions options,
      ReadTableOptions(Option::Object("config", PostgresDestinationSpec().fields), context.config));
  destination->schema_ = std::move(options.schema);
  destination->unnest_ = options.unnest;
  std::string table = std::move(options.table);
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
  BIZON_ASSIGN_OR_RETURN(destination->policies_, ReadTablePolicies(context.config));
  BIZON_RETURN_IF_ERROR(destination->CheckPolicies());
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
  const TablePolicy& policy = policies_.For(table_name);
  SyncMode mode =
      policy.disposition == WriteDisposition::kReplace ? SyncMode::kFullRefresh : sync_.sync_mode;
  // A merging stream stages its loads beside the table until their cursor is recorded.
  std::string staging = mode == SyncMode::kStream && policy.merges()
                            ? std::string(table_name) + std::string(kMergeStagingSuffix)
                            : StagingTableName(table_name, mode);
  std::vector<std::string> needed = {staging};
  if (policy.contract == SchemaContract::kDiscardRow ||
      policy.contract == SchemaContract::kDiscardValue) {
    needed.push_back(RejectedTableName(table_name));
  }
  for (const std::string& name : needed) {
    if (name.size() > kMaxIdentifierBytes) {
      return Fail(DestinationError(
          StatusCode::kInvalidArgument,
          fmt::format("a destination id is too long for a postgres table: PostgreSQL keeps {} "
                      "bytes of a name, and the table it needs ({}) has {}: {}",
                      kMaxIdentifierBytes, name, name.size(), QuoteDestinationId(table_name))));
    }
  }
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
  TableState state{.name = std::string(table_name),
                   .staging = std::move(staging),
                   .mode = mode,
                   .policy = &policy};
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

std::string PostgresDestination::StagingDefinitions(const TableState& table,
                                                    const std::vector<Column>& columns) const {
  std::string definitions = fmt::format("{}, {} BIGINT", ColumnDefinitions(columns), kLoadIdColumn);
  if (table.merges()) {
    definitions += fmt::format(", {} BIGINT, {} BOOLEAN", kSequenceColumn, kDeletedColumn);
  }
  return definitions;
}

std::string PostgresDestination::CopyColumns(const TableState& table,
                                             const std::vector<Column>& columns) const {
  std::string list = fmt::format("{}, {}", ColumnList(columns), kLoadIdColumn);
  if (table.merges()) list += fmt::format(", {}, {}", kSequenceColumn, kDeletedColumn);
  return list;
}

template <typename... Args>
Status PostgresDestination::ForgetRejected(const TableState& table, std::string_view condition,
                                           const Args&... args) {
  if (table.policy->contract != SchemaContract::kDiscardRow &&
      table.policy->contract != SchemaContract::kDiscardValue) {
    return Status::Ok();
  }
  std::string rejected = Qualified(RejectedTableName(table.name));
  BIZON_ASSIGN_OR_RETURN(PgResult exists,
                         connection_->Query("SELECT to_regclass($1) IS NOT NULL",
                                            "look up the rejected records' table", rejected));
  if (!exists.Bool(0, 0)) return Status::Ok();
  return connection_->Run(fmt::format("DELETE FROM {} WHERE {}", rejected, condition),
                          "remove rejected records of loads that will be fetched again", args...);
}

Status PostgresDestination::Track(TableState& table) {
  BIZON_ASSIGN_OR_RETURN(const std::vector<Column>* columns, ColumnsFor(table.name));
  BIZON_RETURN_IF_ERROR(LockTable(table.name));
  std::string definitions = StagingDefinitions(table, *columns);
  if (table.mode != SyncMode::kStream) {
    // Whatever is staged belongs to an abandoned job, whose rows will be fetched again.
    BIZON_RETURN_IF_ERROR(
        connection_->Run(fmt::format("DROP TABLE IF EXISTS {}", Qualified(table.staging)),
                         "drop a stale staging table"));
    BIZON_RETURN_IF_ERROR(
        connection_->Run(fmt::format("CREATE TABLE {} ({})", Qualified(table.staging), definitions),
                         "create the staging table"));
    std::string abandoned = fmt::format(
        "SELECT load_id FROM {} WHERE table_name = $1 AND staging_name = $2"
        " AND kind <> 'publish' AND job_id <> $3",
        Qualified(kLoadLog));
    BIZON_RETURN_IF_ERROR(ForgetRejected(table, fmt::format("{} IN ({})", kLoadIdColumn, abandoned),
                                         table.name, table.staging, sync_.job_id));
    BIZON_RETURN_IF_ERROR(connection_->Run(
        fmt::format("DELETE FROM {} WHERE table_name = $1 AND staging_name = $2"
                    " AND kind <> 'publish' AND job_id <> $3",
                    Qualified(kLoadLog)),
        "forget the loads of an abandoned job", table.name, table.staging, sync_.job_id));
  } else if (table.merges()) {
    // Kept across jobs and members: each applies only its own loads (ApplyMerge()).
    BIZON_RETURN_IF_ERROR(connection_->Run(
        fmt::format("CREATE TABLE IF NOT EXISTS {} ({})", Qualified(table.staging), definitions),
        "create the merge staging table"));
    BIZON_RETURN_IF_ERROR(EnsureMergeTarget(table, *columns));
  } else {
    std::string qualified = Qualified(table.name);
    BIZON_RETURN_IF_ERROR(
        connection_->Run(fmt::format("CREATE TABLE IF NOT EXISTS {} ({})", qualified, definitions),
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
  BIZON_RETURN_IF_ERROR(ForgetRejected(
      table, fmt::format("{} > $3 AND {} IN ({})", kLoadIdColumn, kLoadIdColumn, uncommitted),
      sync_.job_id, table.name, committed_load));
  BIZON_RETURN_IF_ERROR(connection_->Run(
      fmt::format("DELETE FROM {} WHERE job_id = $1 AND table_name = $2 AND kind = 'write'"
                  " AND load_id > $3",
                  Qualified(kLoadLog)),
      "forget the loads after the last committed cursor", sync_.job_id, table.name,
      committed_load));
  if (table.merges_continuously()) {
    // The cursor may have been recorded and the run killed before its merge: apply it now
    // (ApplyMerge() forgets the loads it applies).
    if (auto merged = ApplyMerge(table, committed_load); !merged) return merged.error();
  } else if (table.mode == SyncMode::kStream) {
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
  RestoreEvolvedColumns(resume_state);
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
                                       TableState& table, int64_t loaded_at_us) {
  RowEncoder& encoder = *encoder_;
  std::string load_text = std::to_string(load_->load_id);
  std::string& out = encoder.chunk;
  out.clear();
  out.reserve(kCopyChunkBytes + 4096);
  for (size_t i : rows) {
    BIZON_ASSIGN_OR_RETURN(ShapedRecord shaped, Shape(records, i, table));
    if (unnest_) {
      BIZON_ASSIGN_OR_RETURN(bool written, AppendUnnestedRow(out, records, i, shaped.row, table));
      if (!written) continue;
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
      AppendCopyText(out, shaped.row);
    }
    out.push_back('\t');
    out.append(load_text);
    if (table.merges()) {
      out.push_back('\t');
      out.append(std::to_string(load_->next_seq++));
      out.append(shaped.deleted ? "\tt" : "\tf");
    }
    out.push_back('\n');
    if (out.size() >= kCopyChunkBytes) {
      BIZON_RETURN_IF_ERROR(connection_->PutCopyData(out));
      out.clear();
    }
  }
  return connection_->PutCopyData(out);
}

namespace {

/// A change event's row and whether it deletes its key.
struct DebeziumChange {
  simdjson::dom::element row;
  bool deleted = false;
};

/// Finds the Debezium envelope of `record` (the record itself, the kafka source's `value`, or
/// the `payload` of the JSON converter's schema wrapper) and reads its row: the after image, or
/// the before image of a delete (op d).
Result<DebeziumChange> ReadDebeziumChange(simdjson::dom::element record,
                                          std::string_view record_id) {
  std::vector<simdjson::dom::element> candidates = {record};
  for (const char* pointer : {"/value", "/payload", "/value/payload"}) {
    simdjson::dom::element candidate;
    if (!record.at_pointer(pointer).get(candidate)) candidates.push_back(candidate);
  }
  for (simdjson::dom::element envelope : candidates) {
    std::string_view op;
    if (!envelope.is_object() || envelope.at_key("op").get_string().get(op)) continue;
    bool deleted = op == "d";
    if (!deleted && op != "c" && op != "u" && op != "r") {
      return Fail(DestinationError(
          StatusCode::kInvalidArgument,
          fmt::format("record {} is a Debezium event with op '{}', which a merge cannot apply "
                      "(c, u, r and d can)",
                      record_id, op)));
    }
    simdjson::dom::element row;
    if (envelope.at_key(deleted ? "before" : "after").get(row) || !row.is_object()) {
      return Fail(
          DestinationError(StatusCode::kInvalidArgument,
                           fmt::format("record {} is a Debezium event (op {}) without its {} image",
                                       record_id, op, deleted ? "before" : "after")));
    }
    return DebeziumChange{.row = row, .deleted = deleted};
  }
  return Fail(DestinationError(
      StatusCode::kInvalidArgument,
      fmt::format("record {} is not a Debezium change event (no envelope with an op field), and "
                  "change_format is debezium",
                  record_id)));
}

/// The JSON pointer of a split field path (hard_delete's).
std::string JsonPointer(const std::vector<std::string>& path) {
  std::string dotted;
  for (const std::string& part : path) {
    if (!dotted.empty()) dotted.push_back('.');
    dotted += part;
  }
  return DottedPathToPointer(dotted);
}

bool IsRawColumn(std::string_view name) {
  return name == "_bizon_id" || name == "_bizon_extracted_at" || name == "_bizon_loaded_at" ||
         name == "_source_record_id" || name == "_source_timestamp" || name == "_source_data";
}

}  // namespace

Result<PostgresDestination::ShapedRecord> PostgresDestination::Shape(const RecordBatch& records,
                                                                     size_t index,
                                                                     const TableState& table) {
  const TablePolicy& policy = *table.policy;
  std::string_view payload = records.payload(index);
  bool raw_keys = !unnest_ && table.merges();
  if (policy.change_format == ChangeFormat::kNone && policy.hard_delete.empty() && !raw_keys) {
    return ShapedRecord{.row = payload};
  }
  RowEncoder& encoder = *encoder_;
  simdjson::dom::element root;
  if (auto error = encoder.dom_parser.parse(payload.data(), payload.size()).get(root)) {
    return Fail(RowEncoder::NotJson(records.id(index), error));
  }
  ShapedRecord shaped{.row = payload};
  simdjson::dom::element row = root;
  if (policy.change_format == ChangeFormat::kDebezium) {
    BIZON_ASSIGN_OR_RETURN(DebeziumChange change, ReadDebeziumChange(root, records.id(index)));
    encoder.shaped_row = simdjson::minify(change.row);
    shaped.row = encoder.shaped_row;
    shaped.deleted = change.deleted;
    row = change.row;
  }
  if (simdjson::dom::element mark;
      !policy.hard_delete.empty() && !row.at_pointer(JsonPointer(policy.hard_delete)).get(mark)) {
    std::string_view text;
    bool flag = false;
    shaped.deleted = shaped.deleted || (!mark.get_bool().get(flag) && flag) ||
                     (!mark.get_string().get(text) && IsDeleteMark(fmt::format("\"{}\"", text)));
  }
  for (const std::string& key : raw_keys ? policy.primary_key : std::vector<std::string>()) {
    simdjson::dom::element value;
    if (IsRawColumn(key)) continue;
    if (row.at_pointer(DottedPathToPointer(key)).get(value) || value.is_null()) {
      return Fail(DestinationError(
          StatusCode::kInvalidArgument,
          fmt::format("record {} has no value for the primary key '{}' of '{}'; a merge needs "
                      "every key",
                      records.id(index), key, table.name)));
    }
  }
  return shaped;
}

Result<bool> PostgresDestination::AppendUnnestedRow(std::string& out, const RecordBatch& records,
                                                    size_t index, std::string_view row,
                                                    TableState& table) {
  RowEncoder& encoder = *encoder_;
  SchemaContract contract = table.policy->contract;
  std::vector<FitProblem>& problems = encoder.problems;
  for (int attempt = 0;; ++attempt) {
    BIZON_ASSIGN_OR_RETURN(const std::vector<Column>* columns, ColumnsFor(table.name));
    BIZON_RETURN_IF_ERROR(encoder.AppendUnnested(out, row, records.id(index), table.name, *columns,
                                                 contract, problems));
    if (problems.empty() || contract == SchemaContract::kDiscardValue) {
      if (!problems.empty()) SetAside(table, records, index, problems);
      if (table.merges()) BIZON_RETURN_IF_ERROR(CheckKeys(table, *columns, records.id(index)));
      return true;
    }
    auto refused = std::find_if(problems.begin(), problems.end(), [](const FitProblem& problem) {
      return problem.column_type && problem.fit == PgFit::kMismatch;
    });
    if (contract == SchemaContract::kDiscardRow) {
      SetAside(table, records, index, problems);
      return false;
    }
    if (contract == SchemaContract::kFreeze || refused != problems.end() || attempt > 0) {
      const FitProblem& problem = refused != problems.end() ? *refused : problems.front();
      return Fail(DestinationError(
          StatusCode::kInvalidArgument,
          fmt::format("record {} (row {} of its batch) does not fit table '{}' under "
                      "schema_contract {}: {}; nothing of this load was written",
                      records.id(index), index, table.name, SchemaContractName(contract),
                      DescribeProblem(problem))));
    }
    BIZON_RETURN_IF_ERROR(EvolveColumns(table, problems, out));
  }
}

void PostgresDestination::SetAside(const TableState& table, const RecordBatch& records,
                                   size_t index, const std::vector<FitProblem>& problems) {
  std::string reason;
  for (const FitProblem& problem : problems) {
    if (!reason.empty()) reason += "; ";
    reason += DescribeProblem(problem);
  }
  load_->rejected.push_back({.table = &table,
                             .record_id = std::string(records.id(index)),
                             .reason = std::move(reason),
                             .record = std::string(records.payload(index))});
}

Status PostgresDestination::CheckKeys(const TableState& table, const std::vector<Column>& columns,
                                      std::string_view record_id) const {
  for (const std::string& key : table.policy->primary_key) {
    auto column = std::find_if(columns.begin(), columns.end(),
                               [&](const Column& c) { return c.name == key; });
    size_t slot = static_cast<size_t>(column - columns.begin());
    if (column == columns.end() || encoder_->slots[slot] == "\\N") {
      return DestinationError(
          StatusCode::kInvalidArgument,
          fmt::format("record {} has no value for the primary key '{}' of '{}'; a merge needs "
                      "every key",
                      record_id, key, table.name));
    }
  }
  return Status::Ok();
}

Status PostgresDestination::EvolveColumns(TableState& table,
                                          const std::vector<FitProblem>& problems,
                                          std::string& pending) {
  // The rows encoded so far go in with the columns they were encoded for.
  BIZON_RETURN_IF_ERROR(connection_->PutCopyData(pending));
  pending.clear();
  BIZON_RETURN_IF_ERROR(EndAppendCopy());
  std::vector<Column>& columns = schemas_[table.name];
  std::string staging = Qualified(table.staging);
  for (const FitProblem& problem : problems) {
    std::string column = connection_->QuoteIdentifier(problem.column);
    if (!problem.column_type) {
      std::optional<PgColumnType> type = InferredType(problem.kind);
      if (!type) continue;
      BIZON_RETURN_IF_ERROR(
          connection_->Run(fmt::format("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}", staging,
                                       column, PgTypeName(*type)),
                           "add a column (schema_contract evolve)"));
      columns.push_back({problem.column, *type});
      spdlog::info("Postgres destination: added column '{}' ({}) to {}.{}", problem.column,
                   PgTypeName(*type), schema_, table.name);
      continue;
    }
    PgColumnType widened = WidenedFor(*problem.column_type, problem.kind);
    BIZON_RETURN_IF_ERROR(
        connection_->Run(fmt::format("ALTER TABLE {} ALTER COLUMN {} TYPE {} USING {}::{}", staging,
                                     column, PgTypeName(widened), column, PgTypeName(widened)),
                         "widen a column (schema_contract evolve)"));
    for (Column& existing : columns) {
      if (existing.name == problem.column) existing.type = widened;
    }
    spdlog::info("Postgres destination: widened column '{}' of {}.{} from {} to {}", problem.column,
                 schema_, table.name, PgTypeName(*problem.column_type), PgTypeName(widened));
  }
  evolved_[table.name] = true;
  return BeginTableCopy(table);
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
      load_.emplace(OpenLoad{.transaction = std::move(transaction),
                             .load_id = next.Int64(0, 0),
                             .schemas_before = schemas_,
                             .evolved_before = evolved_});
    }
    for (const auto& [table, rows] : groups) {
      if (load_->copying != table) {
        BIZON_RETURN_IF_ERROR(EndAppendCopy());
        bool tracking = std::find(load_->newly_tracked.begin(), load_->newly_tracked.end(),
                                  table) != load_->newly_tracked.end();
        if (!table->tracked && !tracking) {
          BIZON_RETURN_IF_ERROR(Track(*table));
          load_->newly_tracked.push_back(table);
        }
        BIZON_RETURN_IF_ERROR(BeginTableCopy(*table));
      }
      BIZON_RETURN_IF_ERROR(AppendRows(records, rows, *table, loaded_at_us));
    }
    return Status::Ok();
  }();
  if (!appended.ok()) AbandonLoad();  // Rolls the whole load back: the run fails with it.
  return appended;
}

void PostgresDestination::AbandonLoad() {
  if (!load_) return;
  // The load's DDL rolls back with it, and so do the columns it evolved.
  schemas_ = std::move(load_->schemas_before);
  evolved_ = std::move(load_->evolved_before);
  load_.reset();
}

Status PostgresDestination::BeginTableCopy(TableState& table) {
  BIZON_ASSIGN_OR_RETURN(const std::vector<Column>* columns, ColumnsFor(table.name));
  BIZON_RETURN_IF_ERROR(
      connection_->BeginCopy(fmt::format("COPY {} ({}) FROM STDIN", Qualified(table.staging),
                                         CopyColumns(table, *columns)),
                             "load rows with COPY"));
  load_->copying = &table;
  return Status::Ok();
}

Status PostgresDestination::WriteRejected() {
  std::vector<const TableState*> tables;
  for (const Rejected& rejected : load_->rejected) {
    if (std::find(tables.begin(), tables.end(), rejected.table) == tables.end()) {
      tables.push_back(rejected.table);
    }
  }
  std::string load_text = std::to_string(load_->load_id);
  for (const TableState* table : tables) {
    std::string name = Qualified(RejectedTableName(table->name));
    BIZON_RETURN_IF_ERROR(connection_->Run(
        fmt::format("CREATE TABLE IF NOT EXISTS {} ({} BIGINT, _bizon_rejected_at TIMESTAMPTZ "
                    "NOT NULL DEFAULT now(), _source_record_id TEXT, reason TEXT, record JSONB)",
                    name, kLoadIdColumn),
        "create the rejected records' table"));
    BIZON_RETURN_IF_ERROR(connection_->BeginCopy(
        fmt::format("COPY {} ({}, _source_record_id, reason, record) FROM STDIN", name,
                    kLoadIdColumn),
        "set rejected records aside"));
    std::string out;
    int64_t count = 0;
    for (const Rejected& rejected : load_->rejected) {
      if (rejected.table != table) continue;
      out += load_text;
      out.push_back('\t');
      AppendCopyText(out, rejected.record_id);
      out.push_back('\t');
      AppendCopyText(out, rejected.reason);
      out.push_back('\t');
      AppendCopyText(out, rejected.record);
      out.push_back('\n');
      ++count;
    }
    BIZON_RETURN_IF_ERROR(connection_->PutCopyData(out));
    if (auto copied = connection_->EndCopy(); !copied) return copied.error();
    spdlog::warn(
        "Postgres destination: {} records did not fit {}.{} (schema_contract {}); set "
        "aside with their reason in {}",
        count, schema_, table->name, SchemaContractName(table->policy->contract), name);
  }
  return Status::Ok();
}

Result<Value> PostgresDestination::Sync() {
  if (!load_) return last_state_;
  Status committed = [&]() -> Status {
    BIZON_RETURN_IF_ERROR(EndAppendCopy());
    BIZON_RETURN_IF_ERROR(WriteRejected());
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
    AbandonLoad();
    return Fail(committed);
  }
  for (TableState* table : load_->newly_tracked) table->tracked = true;
  last_state_ = StateFor(load_->load_id);
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
    if (table.mode == SyncMode::kFullRefresh) {
      BIZON_ASSIGN_OR_RETURN(rows, SwapInStaging(table, *columns));
    } else if (table.merges()) {
      BIZON_RETURN_IF_ERROR(EnsureMergeTarget(table, *columns));
      BIZON_ASSIGN_OR_RETURN(rows, ApplyMerge(table, std::nullopt));
      BIZON_RETURN_IF_ERROR(
          connection_->Run(fmt::format("DROP TABLE {}", staging), "drop the staging table"));
    } else {
      BIZON_RETURN_IF_ERROR(connection_->Run(
          fmt::format("CREATE TABLE IF NOT EXISTS {} ({})", main, ColumnDefinitions(*columns)),
          "create the destination table"));
      if (evolved_.contains(table.name)) BIZON_RETURN_IF_ERROR(AlignTable(table.name, *columns));
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

Result<int64_t> PostgresDestination::SwapInStaging(const TableState& table,
                                                   const std::vector<Column>& columns) {
  std::string main = Qualified(table.name);
  std::string staging = Qualified(table.staging);
  BIZON_ASSIGN_OR_RETURN(
      PgResult written,
      connection_->Query(fmt::format("SELECT COALESCE(SUM(rows), 0)::bigint FROM {}"
                                     " WHERE job_id = $1 AND table_name = $2"
                                     " AND kind = 'write'",
                                     Qualified(kLoadLog)),
                         "count the staged rows", sync_.job_id, table.name));
  int64_t rows = written.Int64(0, 0);
  if (table.merges()) {
    BIZON_ASSIGN_OR_RETURN(rows, DeduplicateStaging(table));
    BIZON_RETURN_IF_ERROR(
        connection_->Run(fmt::format("ALTER TABLE {} DROP COLUMN {}, DROP COLUMN {}", staging,
                                     kSequenceColumn, kDeletedColumn),
                         "drop the merge columns"));
  }
  // The swap: one transaction, so a reader sees the old table or the new one, never a mix.
  BIZON_RETURN_IF_ERROR(
      connection_->Run(fmt::format("ALTER TABLE {} DROP COLUMN {}", staging, kLoadIdColumn),
                       "drop the load column"));
  BIZON_RETURN_IF_ERROR(
      connection_->Run(fmt::format("DROP TABLE IF EXISTS {}", main), "drop the replaced table"));
  BIZON_RETURN_IF_ERROR(connection_->Run(
      fmt::format("ALTER TABLE {} RENAME TO {}", staging, connection_->QuoteIdentifier(table.name)),
      "swap the staging table in"));
  // The next merge into the swapped-in table finds its key index.
  if (table.merges()) BIZON_RETURN_IF_ERROR(EnsureMergeTarget(table, columns));
  return rows;
}

Status PostgresDestination::OnCursorRecorded(const Value& state) {
  const Value* load = state.is_map() ? state.Find("load_id") : nullptr;
  if (load == nullptr || !load->is_integer() || connection_ == nullptr) return Status::Ok();
  return ApplyContinuousMerges(load->AsInteger());
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
// Merge and schema evolution.

Status PostgresDestination::CheckPolicies() const {
  if (!unnest_) return Status::Ok();  // Raw keys are paths into _source_data.
  for (const auto& entry : schemas_) {
    const std::string& id = entry.first;
    const std::vector<Column>& columns = entry.second;
    const TablePolicy& policy = policies_.For(id);
    if (!policy.merges()) continue;
    auto declared = [&columns](std::string_view name) {
      return std::any_of(columns.begin(), columns.end(),
                         [name](const Column& column) { return column.name == name; });
    };
    for (const std::string& key : policy.primary_key) {
      if (!declared(key)) {
        return ConfigError(fmt::format(
            "destination.config.primary_key: '{}' is not a column of the record_schema of '{}'",
            key, id));
      }
    }
    if (policy.dedup_sort && !declared(policy.dedup_sort->column) &&
        policy.contract != SchemaContract::kEvolve) {
      return ConfigError(fmt::format(
          "destination.config.dedup_sort.column: '{}' is not a column of the record_schema of "
          "'{}'",
          policy.dedup_sort->column, id));
    }
  }
  return Status::Ok();
}

std::string PostgresDestination::KeyExpression(std::string_view alias, std::string_view key) const {
  std::string prefix = alias.empty() ? std::string() : std::string(alias) + ".";
  if (unnest_ || IsRawColumn(key)) return prefix + connection_->QuoteIdentifier(key);
  std::string path;
  for (const std::string& part : SplitFieldPath(key)) {
    if (!path.empty()) path += ", ";
    path += SqlTextLiteral(part);
  }
  return fmt::format("({}_source_data #>> ARRAY[{}])", prefix, path);
}

std::string PostgresDestination::WinnerQuery(const TableState& table,
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
    std::string sort = unnest_ || IsRawColumn(policy.dedup_sort->column)
                           ? "s." + connection_->QuoteIdentifier(policy.dedup_sort->column)
                           : fmt::format("(s._source_data #> ARRAY[{}])",
                                         SqlTextLiteral(policy.dedup_sort->column));
    order +=
        fmt::format(", {} {} NULLS LAST", sort, policy.dedup_sort->descending ? "DESC" : "ASC");
  }
  // Ties, and no dedup_sort: the record received last wins.
  order += fmt::format(", s.{} DESC, s.{} DESC", kLoadIdColumn, kSequenceColumn);
  std::string list;
  for (const Column& column : columns) {
    if (!list.empty()) list += ", ";
    list += "s." + connection_->QuoteIdentifier(column.name);
  }
  return fmt::format("SELECT DISTINCT ON ({}) {}, s.{} FROM {} s WHERE {} ORDER BY {}", keys, list,
                     kDeletedColumn, Qualified(table.staging), where, order);
}

Status PostgresDestination::EnsureMergeTarget(const TableState& table,
                                              const std::vector<Column>& columns) {
  std::string target = Qualified(table.name);
  BIZON_RETURN_IF_ERROR(connection_->Run(
      fmt::format("CREATE TABLE IF NOT EXISTS {} ({})", target, ColumnDefinitions(columns)),
      "create the merge target"));
  std::string keys;
  for (const std::string& key : table.policy->primary_key) {
    if (!keys.empty()) keys += ", ";
    keys += KeyExpression("", key);
  }
  bool unique = table.policy->strategy == MergeStrategy::kUpsert;
  // Named after the table and the kind, so each table has one of each.
  std::string index = fmt::format(
      "_bizon_key_{:016x}",
      static_cast<uint64_t>(AdvisoryLockKey(fmt::format("{}\x1f{}", table.name, unique))));
  return connection_->Run(
      fmt::format("CREATE {}INDEX IF NOT EXISTS {} ON {} ({})", unique ? "UNIQUE " : "",
                  connection_->QuoteIdentifier(index), target, keys),
      "index the merge key");
}

Status PostgresDestination::AlignTable(std::string_view target,
                                       const std::vector<Column>& columns) {
  std::string qualified = Qualified(target);
  BIZON_ASSIGN_OR_RETURN(
      PgResult existing,
      connection_->Query("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute"
                         " WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped",
                         "read the table's columns", qualified));
  for (const Column& column : columns) {
    std::optional<PgColumnType> current;
    bool found = false;
    for (int row = 0; row < existing.rows() && !found; ++row) {
      if (existing.Text(row, 0) != column.name) continue;
      found = true;
      current = ParsePgColumnType(existing.Text(row, 1));
    }
    std::string name = connection_->QuoteIdentifier(column.name);
    std::string_view type = PgTypeName(column.type);
    if (!found) {
      BIZON_RETURN_IF_ERROR(connection_->Run(
          fmt::format("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}", qualified, name, type),
          "add an evolved column to the table"));
    } else if (current && IsWidening(*current, column.type)) {
      BIZON_RETURN_IF_ERROR(
          connection_->Run(fmt::format("ALTER TABLE {} ALTER COLUMN {} TYPE {} USING {}::{}",
                                       qualified, name, type, name, type),
                           "widen a column of the table"));
    }
  }
  return Status::Ok();
}

Result<int64_t> PostgresDestination::ApplyMerge(const TableState& table,
                                                std::optional<int64_t> through_load) {
  BIZON_ASSIGN_OR_RETURN(const std::vector<Column>* columns, ColumnsFor(table.name));
  if (evolved_.contains(table.name)) BIZON_RETURN_IF_ERROR(AlignTable(table.name, *columns));
  // A merging stream applies only this job's loads the recorded cursor covers: another member's
  // loads share the staging table, and rows past the cursor will be fetched again.
  std::string where = "TRUE";
  if (through_load) {
    where = fmt::format(
        "s.{} <= {} AND s.{} IN (SELECT load_id FROM {} WHERE job_id = {} AND table_name = {}"
        " AND kind = 'write')",
        kLoadIdColumn, *through_load, kLoadIdColumn, Qualified(kLoadLog),
        SqlTextLiteral(sync_.job_id), SqlTextLiteral(table.name));
  }
  constexpr std::string_view kWinners = "_bizon_merge_rows";
  BIZON_RETURN_IF_ERROR(connection_->Run(fmt::format("CREATE TEMP TABLE {} ON COMMIT DROP AS {}",
                                                     kWinners, WinnerQuery(table, *columns, where)),
                                         "choose each key's winning row"));
  std::string target = Qualified(table.name);
  std::string match;
  for (const std::string& key : table.policy->primary_key) {
    if (!match.empty()) match += " AND ";
    match += fmt::format("{} = {}", KeyExpression("t", key), KeyExpression("m", key));
  }
  bool upsert = table.policy->strategy == MergeStrategy::kUpsert;
  BIZON_RETURN_IF_ERROR(connection_->Run(
      fmt::format("DELETE FROM {} t USING {} m WHERE {}{}", target, kWinners, match,
                  upsert ? fmt::format(" AND m.{}", kDeletedColumn) : std::string()),
      upsert ? "apply the deletes" : "delete the merged keys"));
  std::string list = ColumnList(*columns);
  std::string insert = fmt::format("INSERT INTO {} ({}) SELECT {} FROM {} WHERE NOT {}", target,
                                   list, list, kWinners, kDeletedColumn);
  if (upsert) insert += UpsertClause(table, *columns);
  BIZON_ASSIGN_OR_RETURN(PgResult inserted, connection_->Query(insert, upsert ? "upsert the rows"
                                                                              : "insert the rows"));
  BIZON_RETURN_IF_ERROR(
      connection_->Run(fmt::format("DROP TABLE {}", kWinners), "drop the winning rows"));
  if (through_load) {
    BIZON_RETURN_IF_ERROR(
        connection_->Run(fmt::format("DELETE FROM {} s WHERE {}", Qualified(table.staging), where),
                         "remove the applied rows from staging"));
    BIZON_RETURN_IF_ERROR(connection_->Run(
        fmt::format("DELETE FROM {} WHERE job_id = $1 AND table_name = $2 AND kind = 'write'"
                    " AND load_id <= $3",
                    Qualified(kLoadLog)),
        "forget the applied loads", sync_.job_id, table.name, *through_load));
  }
  return inserted.AffectedRows();
}

std::string PostgresDestination::UpsertClause(const TableState& table,
                                              const std::vector<Column>& columns) const {
  std::string keys;
  for (const std::string& key : table.policy->primary_key) {
    if (!keys.empty()) keys += ", ";
    keys += KeyExpression("", key);
  }
  std::string updates;
  for (const Column& column : columns) {
    const std::vector<std::string>& primary_key = table.policy->primary_key;
    if (unnest_ &&
        std::find(primary_key.begin(), primary_key.end(), column.name) != primary_key.end()) {
      continue;
    }
    if (!updates.empty()) updates += ", ";
    std::string name = connection_->QuoteIdentifier(column.name);
    updates += fmt::format("{} = EXCLUDED.{}", name, name);
  }
  return updates.empty() ? fmt::format(" ON CONFLICT ({}) DO NOTHING", keys)
                         : fmt::format(" ON CONFLICT ({}) DO UPDATE SET {}", keys, updates);
}

Result<int64_t> PostgresDestination::DeduplicateStaging(const TableState& table) {
  BIZON_ASSIGN_OR_RETURN(const std::vector<Column>* columns, ColumnsFor(table.name));
  constexpr std::string_view kWinners = "_bizon_merge_rows";
  BIZON_RETURN_IF_ERROR(
      connection_->Run(fmt::format("CREATE TEMP TABLE {} ON COMMIT DROP AS {}", kWinners,
                                   WinnerQuery(table, *columns, "TRUE")),
                       "choose each key's winning row"));
  std::string staging = Qualified(table.staging);
  BIZON_RETURN_IF_ERROR(
      connection_->Run(fmt::format("TRUNCATE {}", staging), "empty the staging table"));
  std::string list = ColumnList(*columns);
  BIZON_ASSIGN_OR_RETURN(
      PgResult kept,
      connection_->Query(fmt::format("INSERT INTO {} ({}) SELECT {} FROM {} WHERE NOT {}", staging,
                                     list, list, kWinners, kDeletedColumn),
                         "keep each key's winning row"));
  BIZON_RETURN_IF_ERROR(
      connection_->Run(fmt::format("DROP TABLE {}", kWinners), "drop the winning rows"));
  return kept.AffectedRows();
}

Status PostgresDestination::ApplyContinuousMerges(int64_t through_load) {
  std::vector<const TableState*> merging;
  for (const auto& [name, table] : tables_) {
    if (table.tracked && table.merges_continuously()) merging.push_back(&table);
  }
  if (merging.empty()) return Status::Ok();
  // Every table's merge in one transaction: readers see all of a cursor's changes or none.
  BIZON_ASSIGN_OR_RETURN(PgTransaction transaction, PgTransaction::Begin(*connection_));
  for (const TableState* table : merging) {
    BIZON_RETURN_IF_ERROR(LockTable(table->name));
    if (auto merged = ApplyMerge(*table, through_load); !merged) return merged.error();
  }
  return transaction.Commit();
}

Value PostgresDestination::StateFor(int64_t load_id) const {
  Value state(Value::Map{{"load_id", Value(load_id)}});
  if (evolved_.empty()) return state;
  Value::Map tables;
  for (const auto& [name, evolved] : evolved_) {
    auto schema = schemas_.find(name);
    if (!evolved || schema == schemas_.end()) continue;
    Value::List columns;
    for (const Column& column : schema->second) {
      columns.push_back(Value(Value::Map{{"name", Value(column.name)},
                                         {"type", Value(std::string(PgTypeName(column.type)))}}));
    }
    tables.emplace_back(name, Value(std::move(columns)));
  }
  state.Set("columns", Value(std::move(tables)));
  return state;
}

void PostgresDestination::RestoreEvolvedColumns(const Value& state) {
  const Value* tables = state.is_map() ? state.Find("columns") : nullptr;
  if (tables == nullptr || !tables->is_map()) return;
  for (const auto& [name, list] : tables->AsMap()) {
    if (!list.is_list()) continue;
    std::vector<Column> columns;
    for (const Value& column : list.AsList()) {
      std::optional<PgColumnType> type = ParsePgColumnType(column.GetString("type"));
      if (type) columns.push_back({column.GetString("name"), *type});
    }
    schemas_[name] = std::move(columns);
    evolved_[name] = true;
  }
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
  std::vector<FieldSpec> disposition = WriteDispositionFields();
  spec.fields.insert(spec.fields.end(), disposition.begin(), disposition.end());
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
      .check_config = CheckTablePolicies,
      .destination_id_keys = {"table"},
      .factory = [](const DestinationContext& context) -> Result<std::unique_ptr<Destination>> {
        BIZON_ASSIGN_OR_RETURN(auto destination, PostgresDestination::Create(context));
        return std::unique_ptr<Destination>(std::move(destination));
      },
  });
}

}  // namespace bizon
