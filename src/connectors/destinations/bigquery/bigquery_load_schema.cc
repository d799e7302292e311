#include "connectors/destinations/bigquery/bigquery_load_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <random>

#include "connectors/destinations/bigquery/avro_ocf_writer.h"

namespace bizon {
namespace {

Status RowError(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message), FailureClass::kDestination);
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const auto yoe = static_cast<unsigned>(year - era * 400);
  const unsigned doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

/// Reads exactly `digits` decimal digits at `pos`.
bool ReadDigits(std::string_view text, size_t& pos, size_t digits, int& value) {
  if (pos + digits > text.size()) return false;
  value = 0;
  for (size_t i = 0; i < digits; ++i) {
    char c = text[pos + i];
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  pos += digits;
  return true;
}

/// "YYYY-MM-DD" at `pos`; days since the epoch.
/// Consumes `separator` at `pos`.
bool ReadSeparator(std::string_view text, size_t& pos, char separator) {
  if (pos >= text.size() || text[pos] != separator) return false;
  ++pos;
  return true;
}

bool ReadDate(std::string_view text, size_t& pos, int64_t& days) {
  int year = 0, month = 0, day = 0;
  if (!ReadDigits(text, pos, 4, year) || !ReadSeparator(text, pos, '-') ||
      !ReadDigits(text, pos, 2, month) || !ReadSeparator(text, pos, '-') ||
      !ReadDigits(text, pos, 2, day)) {
    return false;
  }
  static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1 || day > kDays[month - 1]) return false;
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (month == 2 && day == 29 && !leap) return false;
  days = DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  return true;
}

/// "HH:MM[:SS[.fraction]]" at `pos`; microseconds since midnight (digits past 6 truncated).
bool ReadTime(std::string_view text, size_t& pos, int64_t& micros, bool seconds_required) {
  int hour = 0, minute = 0, second = 0;
  if (!ReadDigits(text, pos, 2, hour) || !ReadSeparator(text, pos, ':') ||
      !ReadDigits(text, pos, 2, minute)) {
    return false;
  }
  if (pos < text.size() && text[pos] == ':') {
    ++pos;
    if (!ReadDigits(text, pos, 2, second)) return false;
  } else if (seconds_required) {
    return false;
  }
  if (hour > 23 || minute > 59 || second > 59) return false;
  int64_t fraction = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    size_t digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 6) fraction = fraction * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return false;
    for (size_t i = digits; i < 6; ++i) fraction *= 10;
  }
  micros = ((static_cast<int64_t>(hour) * 60 + minute) * 60 + second) * 1000000 + fraction;
  return true;
}

std::string TypeJson(const BqColumn& column) {
  switch (column.type) {
    case BqColumnType::kString:
      return "\"string\"";
    case BqColumnType::kBytes:
      return "\"bytes\"";
    case BqColumnType::kInteger:
      return "\"long\"";
    case BqColumnType::kFloat:
      return "\"double\"";
    case BqColumnType::kNumeric:
      return R"({"type":"bytes","logicalType":"decimal","precision":38,"scale":9})";
    case BqColumnType::kBignumeric:
      return R"({"type":"bytes","logicalType":"decimal","precision":76,"scale":38})";
    case BqColumnType::kBoolean:
      return "\"boolean\"";
    case BqColumnType::kTimestamp:
      return R"({"type":"long","logicalType":"timestamp-micros"})";
    case BqColumnType::kDate:
      return R"({"type":"int","logicalType":"date"})";
    case BqColumnType::kTime:
      return R"({"type":"long","logicalType":"time-micros"})";
    case BqColumnType::kDatetime:
      return R"({"type":"string","logicalType":"datetime"})";
    case BqColumnType::kJson:
      return R"({"type":"string","sqlType":"JSON"})";
    case BqColumnType::kGeography:
      return R"({"type":"string","sqlType":"GEOGRAPHY"})";
  }
  return "\"string\"";
}

}  // namespace

bool IsLoadableColumnName(std::string_view name) {
  if (name.empty()) return false;
  auto first = static_cast<unsigned char>(name[0]);
  if (!(std::isalpha(first) != 0 || first == '_')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    auto byte = static_cast<unsigned char>(c);
    return byte < 0x80 && (std::isalnum(byte) != 0 || byte == '_');
  });
}

Result<BqColumnType> ParseBqColumnType(std::string_view type) {
  static const std::vector<std::pair<std::string_view, BqColumnType>> kTypes = {
      {"STRING", BqColumnType::kString},       {"BYTES", BqColumnType::kBytes},
      {"INTEGER", BqColumnType::kInteger},     {"INT64", BqColumnType::kInteger},
      {"FLOAT", BqColumnType::kFloat},         {"FLOAT64", BqColumnType::kFloat},
      {"NUMERIC", BqColumnType::kNumeric},     {"BIGNUMERIC", BqColumnType::kBignumeric},
      {"BOOLEAN", BqColumnType::kBoolean},     {"BOOL", BqColumnType::kBoolean},
      {"TIMESTAMP", BqColumnType::kTimestamp}, {"DATE", BqColumnType::kDate},
      {"TIME", BqColumnType::kTime},           {"DATETIME", BqColumnType::kDatetime},
      {"JSON", BqColumnType::kJson},           {"GEOGRAPHY", BqColumnType::kGeography},
  };
  for (const auto& [name, value] : kTypes) {
    if (name == type) return value;
  }
  if (type == "RECORD") {
    return Fail(InvalidArgumentError(
        "type RECORD cannot be loaded: a record_schemas column has no sub-fields; declare it "
        "JSON instead"));
  }
  return Fail(InvalidArgumentError(fmt::format("unknown BigQuery type '{}'", type)));
}

std::string_view BqColumnTypeName(BqColumnType type) {
  switch (type) {
    case BqColumnType::kString:
      return "STRING";
    case BqColumnType::kBytes:
      return "BYTES";
    case BqColumnType::kInteger:
      return "INTEGER";
    case BqColumnType::kFloat:
      return "FLOAT";
    case BqColumnType::kNumeric:
      return "NUMERIC";
    case BqColumnType::kBignumeric:
      return "BIGNUMERIC";
    case BqColumnType::kBoolean:
      return "BOOLEAN";
    case BqColumnType::kTimestamp:
      return "TIMESTAMP";
    case BqColumnType::kDate:
      return "DATE";
    case BqColumnType::kTime:
      return "TIME";
    case BqColumnType::kDatetime:
      return "DATETIME";
    case BqColumnType::kJson:
      return "JSON";
    case BqColumnType::kGeography:
      return "GEOGRAPHY";
  }
  return "STRING";
}

std::vector<BqColumn> BigqueryRawColumns() {
  return {
      {"_source_record_id", BqColumnType::kString, BqColumnMode::kNullable, ""},
      {"_source_timestamp", BqColumnType::kTimestamp, BqColumnMode::kNullable, ""},
      {"_source_data", BqColumnType::kString, BqColumnMode::kNullable, ""},
      {"_bizon_extracted_at", BqColumnType::kTimestamp, BqColumnMode::kNullable, ""},
      {"_bizon_loaded_at", BqColumnType::kTimestamp, BqColumnMode::kNullable, ""},
      {"_bizon_id", BqColumnType::kString, BqColumnMode::kNullable, ""},
  };
}

Result<std::vector<BqColumn>> ParseRecordSchema(const Value& record_schema,
                                                std::string_view where) {
  std::vector<BqColumn> columns;
  if (!record_schema.is_list() || record_schema.AsList().empty()) {
    return Fail(InvalidArgumentError(fmt::format("{}: record_schema has no columns", where)));
  }
  for (const Value& item : record_schema.AsList()) {
    BqColumn column;
    column.name = item.GetString("name");
    if (!IsLoadableColumnName(column.name)) {
      return Fail(InvalidArgumentError(fmt::format(
          "{}: column name '{}' cannot be loaded: use letters, digits and underscores, not "
          "starting with a digit",
          where, column.name)));
    }
    for (const BqColumn& earlier : columns) {
      if (earlier.name == column.name) {
        return Fail(InvalidArgumentError(
            fmt::format("{}: column '{}' is declared twice", where, column.name)));
      }
    }
    Result<BqColumnType> type = ParseBqColumnType(item.GetString("type"));
    if (!type) {
      return Fail(InvalidArgumentError(
          fmt::format("{}: column '{}': {}", where, column.name, type.error().message())));
    }
    column.type = *type;
    // Any mode but REQUIRED and REPEATED, or none, is NULLABLE.
    std::string mode = item.GetString("mode");
    column.mode = mode == "REQUIRED"   ? BqColumnMode::kRequired
                  : mode == "REPEATED" ? BqColumnMode::kRepeated
                                       : BqColumnMode::kNullable;
    column.description = item.GetString("description");
    columns.push_back(std::move(column));
  }
  return columns;
}

BigQuerySchema ToBigQuerySchema(const std::vector<BqColumn>& columns) {
  BigQuerySchema schema;
  for (const BqColumn& column : columns) {
    BigQueryField field;
    field.name = column.name;
    field.type = std::string(BqColumnTypeName(column.type));
    field.mode = column.mode == BqColumnMode::kRequired   ? "REQUIRED"
                 : column.mode == BqColumnMode::kRepeated ? "REPEATED"
                                                          : "NULLABLE";
    field.description = column.description;
    schema.push_back(std::move(field));
  }
  return schema;
}

std::string AvroSchemaFor(const std::vector<BqColumn>& columns) {
  std::string out = R"({"type":"record","name":"bizon_row","fields":[)";
  for (size_t i = 0; i < columns.size(); ++i) {
    const BqColumn& column = columns[i];
    if (i != 0) out.push_back(',');
    out.append(R"({"name":)");
    AppendJsonString(out, column.name);
    out.append(R"(,"type":)");
    switch (column.mode) {
      case BqColumnMode::kNullable:
        out.append(R"(["null",)").append(TypeJson(column)).append("]");
        break;
      case BqColumnMode::kRequired:
        out.append(TypeJson(column));
        break;
      case BqColumnMode::kRepeated:
        out.append(R"({"type":"array","items":)").append(TypeJson(column)).append("}");
        break;
    }
    out.push_back('}');
  }
  out.append("]}");
  return out;
}

namespace {

/// A decimal number's text read as its digits and the power of ten that scales them.
struct DecimalText {
  bool negative = false;
  std::string digits;
  int64_t exponent = 0;
};

/// Reads a decimal number (optionally signed, with a fraction and an exponent); nullopt when
/// the text is not one.
std::optional<DecimalText> ReadDecimalText(std::string_view text) {
  DecimalText out;
  size_t pos = 0;
  if (pos < text.size() && (text[pos] == '-' || text[pos] == '+')) {
    out.negative = text[pos++] == '-';
  }
  bool any = false;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    out.digits.push_back(text[pos++]);
    any = true;
  }
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      out.digits.push_back(text[pos++]);
      --out.exponent;
      any = true;
    }
  }
  if (!any) return std::nullopt;
  if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
    ++pos;
    if (pos < text.size() && text[pos] == '+') ++pos;
    int64_t value = 0;
    auto [end, error] = std::from_chars(text.data() + pos, text.data() + text.size(), value);
    if (error != std::errc() || end == text.data() + pos) return std::nullopt;
    pos = static_cast<size_t>(end - text.data());
    if (value > 1000 || value < -1000) return std::nullopt;
    out.exponent += value;
  }
  if (pos != text.size()) return std::nullopt;
  return out;
}

}  // namespace

bool IsExactDecimal(std::string_view text, int precision, int scale) {
  std::optional<DecimalText> number = ReadDecimalText(text);
  if (!number) return false;
  std::string& digits = number->digits;
  size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return true;  // Zero.
  digits.erase(0, first);
  int64_t exponent = number->exponent;
  while (digits.back() == '0') {
    digits.pop_back();
    ++exponent;
  }
  int64_t fraction = exponent < 0 ? -exponent : 0;
  int64_t integer = std::max<int64_t>(0, static_cast<int64_t>(digits.size()) + exponent);
  return fraction <= scale && integer <= precision - scale;
}

Result<std::string> DecimalBytes(std::string_view text, int precision, int scale) {
  std::optional<DecimalText> number = ReadDecimalText(text);
  if (!number) {
    return Fail(InvalidArgumentError(fmt::format("'{}' is not a decimal number", text)));
  }
  bool negative = number->negative;
  std::string digits = std::move(number->digits);
  int64_t exponent = number->exponent + scale;
  if (exponent >= 0) {
    digits.append(static_cast<size_t>(exponent), '0');
  } else {
    auto drop = static_cast<size_t>(-exponent);
    bool round_up = false;
    if (drop <= digits.size()) {
      round_up = digits[digits.size() - drop] >= '5';
      digits.resize(digits.size() - drop);
    } else {
      digits.clear();
    }
    if (round_up) {
      size_t i = digits.size();
      while (i > 0 && digits[i - 1] == '9') digits[--i] = '0';
      if (i == 0) {
        digits.insert(digits.begin(), '1');
      } else {
        ++digits[i - 1];
      }
    }
  }
  size_t first = digits.find_first_not_of('0');
  digits = first == std::string::npos ? "" : digits.substr(first);
  if (static_cast<int>(digits.size()) > precision) {
    return Fail(
        Status(StatusCode::kInvalidArgument,
               fmt::format("'{}' has more than {} digits at scale {}", text, precision, scale)));
  }
  // Decimal digits to a little-endian base-256 magnitude.
  std::vector<uint8_t> magnitude;
  for (char c : digits) {
    unsigned carry = static_cast<unsigned>(c - '0');
    for (uint8_t& byte : magnitude) {
      unsigned value = byte * 10U + carry;
      byte = static_cast<uint8_t>(value & 0xff);
      carry = value >> 8;
    }
    while (carry != 0) {
      magnitude.push_back(static_cast<uint8_t>(carry & 0xff));
      carry >>= 8;
    }
  }
  magnitude.push_back(0);  // Room for the sign bit.
  if (negative) {
    unsigned carry = 1;
    for (uint8_t& byte : magnitude) {
      unsigned value = static_cast<uint8_t>(~byte) + carry;
      byte = static_cast<uint8_t>(value & 0xff);
      carry = value >> 8;
    }
  }
  // Shortest two's-complement form.
  while (magnitude.size() > 1) {
    uint8_t top = magnitude.back();
    uint8_t next = magnitude[magnitude.size() - 2];
    if ((top == 0 && (next & 0x80) == 0) || (top == 0xff && (next & 0x80) != 0)) {
      magnitude.pop_back();
    } else {
      break;
    }
  }
  return std::string(magnitude.rbegin(), magnitude.rend());
}

Result<int64_t> ParseBqTimestamp(std::string_view text) {
  auto invalid = [&] {
    return Fail(InvalidArgumentError(fmt::format("'{}' is not a TIMESTAMP", text)));
  };
  size_t pos = 0;
  int64_t days = 0;
  if (!ReadDate(text, pos, days)) return invalid();
  int64_t micros = 0;
  if (pos < text.size() && (text[pos] == 'T' || text[pos] == 't' || text[pos] == ' ')) {
    ++pos;
    if (!ReadTime(text, pos, micros, false)) return invalid();
  }
  int64_t offset_minutes = 0;
  while (pos < text.size() && text[pos] == ' ') ++pos;
  if (pos < text.size()) {
    std::string_view zone = text.substr(pos);
    if (zone == "Z" || zone == "z" || zone == "UTC") {
      pos = text.size();
    } else if (zone[0] == '+' || zone[0] == '-') {
      int sign = zone[0] == '-' ? -1 : 1;
      ++pos;
      int hours = 0, minutes = 0;
      if (!ReadDigits(text, pos, 2, hours)) return invalid();
      if (pos < text.size() && text[pos] == ':') ++pos;
      if (pos < text.size() && !ReadDigits(text, pos, 2, minutes)) return invalid();
      if (hours > 23 || minutes > 59) return invalid();
      offset_minutes = static_cast<int64_t>(sign) * (hours * 60 + minutes);
    } else {
      return invalid();
    }
  }
  if (pos != text.size()) return invalid();
  return days * 86400000000LL + micros - offset_minutes * 60000000LL;
}

Result<int32_t> ParseBqDate(std::string_view text) {
  size_t pos = 0;
  int64_t days = 0;
  if (!ReadDate(text, pos, days) || pos != text.size()) {
    return Fail(InvalidArgumentError(fmt::format("'{}' is not a DATE (YYYY-MM-DD)", text)));
  }
  return static_cast<int32_t>(days);
}

Result<int64_t> ParseBqTime(std::string_view text) {
  size_t pos = 0;
  int64_t micros = 0;
  if (!ReadTime(text, pos, micros, true) || pos != text.size()) {
    return Fail(InvalidArgumentError(fmt::format("'{}' is not a TIME (HH:MM:SS[.ffffff])", text)));
  }
  return micros;
}

namespace {

// How a JSON value becomes each column type, shared by the encoder and FitsColumnType so that a
// value the contract check lets through is one the encoder writes.

std::optional<int64_t> IntegerOf(const Value& value) {
  if (value.is_integer()) return value.AsInteger();
  if (value.is_string()) {
    const std::string& s = value.AsString();
    int64_t integer = 0;
    auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), integer);
    if (error != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return integer;
  }
  if (value.kind() == Value::Kind::kDouble && std::trunc(value.AsDouble()) == value.AsDouble() &&
      std::fabs(value.AsDouble()) < 9.2e18) {
    return static_cast<int64_t>(value.AsDouble());
  }
  return std::nullopt;
}

std::optional<double> DoubleOf(const Value& value) {
  if (value.is_number()) return value.AsDouble();
  if (!value.is_string()) return std::nullopt;
  const std::string& s = value.AsString();
  double number = 0;
  auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), number);
  if (error != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return number;
}

std::optional<bool> BoolOf(const Value& value) {
  if (value.is_bool()) return value.AsBool();
  if (value.is_string() && (value.AsString() == "true" || value.AsString() == "false")) {
    return value.AsString() == "true";
  }
  return std::nullopt;
}

Result<int64_t> TimestampOf(const Value& value) {
  if (value.is_string()) return ParseBqTimestamp(value.AsString());
  if (value.is_integer()) return value.AsInteger() * 1000000;
  if (value.is_number()) return static_cast<int64_t>(std::llround(value.AsDouble() * 1e6));
  return Fail(InvalidArgumentError("not a TIMESTAMP"));
}

}  // namespace

std::optional<std::string> DecimalTextOf(const Value& value) {
  if (value.is_integer()) return std::to_string(value.AsInteger());
  if (value.kind() == Value::Kind::kDouble) return fmt::format("{}", value.AsDouble());
  if (value.is_string()) return value.AsString();
  return std::nullopt;
}

bool FitsColumnType(BqColumnType type, const Value& value) {
  switch (type) {
    case BqColumnType::kString:
    case BqColumnType::kJson:
    case BqColumnType::kGeography:
    case BqColumnType::kDatetime:
      return true;
    case BqColumnType::kBytes:
      return value.is_string();
    case BqColumnType::kInteger:
      return IntegerOf(value).has_value();
    case BqColumnType::kFloat:
      return DoubleOf(value).has_value();
    case BqColumnType::kNumeric:
    case BqColumnType::kBignumeric: {
      std::optional<std::string> number = DecimalTextOf(value);
      bool big = type == BqColumnType::kBignumeric;
      return number && DecimalBytes(*number, big ? 76 : 38, big ? 38 : 9).has_value();
    }
    case BqColumnType::kBoolean:
      return BoolOf(value).has_value();
    case BqColumnType::kTimestamp:
      return (value.is_string() || value.is_number()) && TimestampOf(value).has_value();
    case BqColumnType::kDate:
      return value.is_string() && ParseBqDate(value.AsString()).has_value();
    case BqColumnType::kTime:
      return value.is_string() && ParseBqTime(value.AsString()).has_value();
  }
  return false;
}

std::string_view BqColumnSqlType(BqColumnType type) {
  switch (type) {
    case BqColumnType::kInteger:
      return "INT64";
    case BqColumnType::kFloat:
      return "FLOAT64";
    case BqColumnType::kBoolean:
      return "BOOL";
    case BqColumnType::kNumeric:
      // NUMERIC's own precision and scale, spelled out: the emulator reads a bare NUMERIC in DDL
      // as DECIMAL(18, 3) and would round the values to 3 decimals.
      return "NUMERIC(38, 9)";
    case BqColumnType::kBignumeric:
      return "BIGNUMERIC(76, 38)";
    default:
      return BqColumnTypeName(type);
  }
}

// -----------------------------------------------------------------------------------------------
// LoadFileEncoder.

struct LoadFileEncoder::State {
  std::vector<BqColumn> columns;
  bool unnest = false;
  std::unique_ptr<AvroOcfWriter> writer;
  std::string text;  // A NUL-terminated copy of the string being set (avro-c reads size + 1).
  std::mt19937_64 random{std::random_device{}()};
  std::vector<const Value*> values;

  Status SetString(avro_value_t& value, std::string_view bytes) {
    text.assign(bytes);
    text.push_back('\0');
    if (avro_value_set_string_len(&value, text.data(), text.size()) != 0) {
      return Status(StatusCode::kInternal, avro_strerror());
    }
    return Status::Ok();
  }

  void AppendUuid(std::string& out) {
    uint64_t high = (random() & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
    uint64_t low = (random() & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
    out.append(fmt::format("{:016x}{:016x}", high, low));
  }

  /// Sets the union `field` to its value branch and returns it.
  static Result<avro_value_t> Branch(avro_value_t& field) {
    avro_value_t branch;
    if (avro_value_set_branch(&field, 1, &branch) != 0) {
      return Fail(Status(StatusCode::kInternal, avro_strerror()));
    }
    return branch;
  }

  static Status SetNull(avro_value_t& field) {
    avro_value_t branch;
    if (avro_value_set_branch(&field, 0, &branch) != 0 || avro_value_set_null(&branch) != 0) {
      return Status(StatusCode::kInternal, avro_strerror());
    }
    return Status::Ok();
  }

  Status AppendRaw(const RecordBatch& batch, size_t i, int64_t loaded_at_us) {
    std::string uuid;
    AppendUuid(uuid);
    const std::string_view strings[] = {batch.id(i), {}, batch.payload(i), {}, {}, uuid};
    const int64_t times[] = {0, batch.timestamp_us(i), 0, batch.extracted_at_us(i), loaded_at_us,
                             0};
    for (size_t column = 0; column < 6; ++column) {
      BIZON_ASSIGN_OR_RETURN(avro_value_t field, writer->Field(column));
      BIZON_ASSIGN_OR_RETURN(avro_value_t branch, Branch(field));
      if (columns[column].type == BqColumnType::kTimestamp) {
        avro_value_set_long(&branch, times[column]);
      } else {
        BIZON_RETURN_IF_ERROR(SetString(branch, strings[column]));
      }
    }
    return writer->AppendRow();
  }

  /// `value` (not null) into the non-union avro value of `column`'s type.
  Status SetScalar(avro_value_t& out, const BqColumn& column, const Value& value) {
    auto mismatch = [&](std::string_view expected) {
      return InvalidArgumentError(
          fmt::format("{} {} is not {}", ToString(value.kind()),
                      value.is_string() ? "'" + value.AsString() + "'" : value.ToJson(), expected));
    };
    switch (column.type) {
      case BqColumnType::kString:
      case BqColumnType::kJson:
      case BqColumnType::kGeography:
      case BqColumnType::kDatetime:
        return SetString(out, value.is_string() ? value.AsString() : value.ToJson());
      case BqColumnType::kBytes:
        if (!value.is_string()) return mismatch("a string");
        text.assign(value.AsString());
        avro_value_set_bytes(&out, text.data(), text.size());
        return Status::Ok();
      case BqColumnType::kInteger: {
        std::optional<int64_t> integer = IntegerOf(value);
        if (!integer) return mismatch("an integer");
        avro_value_set_long(&out, *integer);
        return Status::Ok();
      }
      case BqColumnType::kFloat: {
        std::optional<double> number = DoubleOf(value);
        if (!number) return mismatch("a number");
        avro_value_set_double(&out, *number);
        return Status::Ok();
      }
      case BqColumnType::kNumeric:
      case BqColumnType::kBignumeric: {
        std::optional<std::string> number = DecimalTextOf(value);
        if (!number) return mismatch("a number");
        bool big = column.type == BqColumnType::kBignumeric;
        Result<std::string> bytes = DecimalBytes(*number, big ? 76 : 38, big ? 38 : 9);
        if (!bytes) return bytes.error();
        text = std::move(*bytes);
        avro_value_set_bytes(&out, text.data(), text.size());
        return Status::Ok();
      }
      case BqColumnType::kBoolean: {
        std::optional<bool> flag = BoolOf(value);
        if (!flag) return mismatch("a boolean");
        avro_value_set_boolean(&out, *flag ? 1 : 0);
        return Status::Ok();
      }
      case BqColumnType::kTimestamp: {
        if (!value.is_string() && !value.is_number()) return mismatch("a TIMESTAMP");
        BIZON_ASSIGN_OR_RETURN(int64_t micros, TimestampOf(value));
        avro_value_set_long(&out, micros);
        return Status::Ok();
      }
      case BqColumnType::kDate: {
        if (!value.is_string()) return mismatch("a DATE string");
        BIZON_ASSIGN_OR_RETURN(int32_t days, ParseBqDate(value.AsString()));
        avro_value_set_int(&out, days);
        return Status::Ok();
      }
      case BqColumnType::kTime: {
        if (!value.is_string()) return mismatch("a TIME string");
        BIZON_ASSIGN_OR_RETURN(int64_t micros, ParseBqTime(value.AsString()));
        avro_value_set_long(&out, micros);
        return Status::Ok();
      }
    }
    return Status::Ok();
  }

  Status SetColumn(avro_value_t& field, const BqColumn& column, const Value* value) {
    bool null = value == nullptr || value->is_null();
    switch (column.mode) {
      case BqColumnMode::kNullable: {
        if (null) return SetNull(field);
        BIZON_ASSIGN_OR_RETURN(avro_value_t branch, Branch(field));
        return SetScalar(branch, column, *value);
      }
      case BqColumnMode::kRequired:
        if (null) return InvalidArgumentError("the column is REQUIRED but the value is missing");
        return SetScalar(field, column, *value);
      case BqColumnMode::kRepeated: {
        if (null) return Status::Ok();
        if (!value->is_list()) return InvalidArgumentError("a REPEATED column needs a JSON list");
        for (const Value& item : value->AsList()) {
          if (item.is_null()) {
            return InvalidArgumentError("a REPEATED column cannot hold a null element");
          }
          avro_value_t element;
          if (avro_value_append(&field, &element, nullptr) != 0) {
            return Status(StatusCode::kInternal, avro_strerror());
          }
          BIZON_RETURN_IF_ERROR(SetScalar(element, column, item));
        }
        return Status::Ok();
      }
    }
    return Status::Ok();
  }

  Status AppendUnnested(const RecordBatch& batch, size_t i) {
    Result<Value> parsed = Value::FromJson(batch.payload(i));
    if (!parsed || !parsed->is_map()) {
      return RowError(fmt::format("record {} is not a JSON object", batch.id(i)));
    }
    return AppendObject(*parsed, batch.id(i));
  }

  Status AppendObject(const Value& row, std::string_view record_id) {
    values.assign(columns.size(), nullptr);
    for (const auto& [key, value] : row.AsMap()) {
      size_t index = 0;
      while (index < columns.size() && columns[index].name != key) ++index;
      if (index == columns.size()) {
        return RowError(
            fmt::format("record {}: Column {} not found in BigQuery schema", record_id, key));
      }
      values[index] = &value;
    }
    for (size_t index = 0; index < columns.size(); ++index) {
      BIZON_ASSIGN_OR_RETURN(avro_value_t field, writer->Field(index));
      Status set = SetColumn(field, columns[index], values[index]);
      if (!set.ok()) {
        return RowError(fmt::format("record {}, column {} ({}): {}", record_id, columns[index].name,
                                    BqColumnTypeName(columns[index].type), set.message()));
      }
    }
    return writer->AppendRow();
  }
};

Result<std::unique_ptr<LoadFileEncoder>> LoadFileEncoder::Make(std::vector<BqColumn> columns,
                                                               bool unnest) {
  std::unique_ptr<LoadFileEncoder> encoder(new LoadFileEncoder());
  encoder->state_ = std::make_unique<State>();
  encoder->state_->unnest = unnest;
  BIZON_ASSIGN_OR_RETURN(encoder->state_->writer, AvroOcfWriter::Make(AvroSchemaFor(columns)));
  encoder->state_->columns = std::move(columns);
  return encoder;
}

LoadFileEncoder::~LoadFileEncoder() = default;

Status LoadFileEncoder::Append(const RecordBatch& batch, size_t i, int64_t loaded_at_us) {
  return state_->unnest ? state_->AppendUnnested(batch, i)
                        : state_->AppendRaw(batch, i, loaded_at_us);
}

Status LoadFileEncoder::AppendObject(const Value& row, std::string_view record_id) {
  if (!state_->unnest || !row.is_map()) {
    return RowError(
        fmt::format("record {} is not a JSON object of the table's columns", record_id));
  }
  return state_->AppendObject(row, record_id);
}

Result<std::string> LoadFileEncoder::Finish() { return state_->writer->Finish(); }

int64_t LoadFileEncoder::rows() const { return state_->writer->rows(); }

}  // namespace bizon
