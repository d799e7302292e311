#include "google/proto_rows.h"

#include <fmt/format.h>
#include <google/protobuf/descriptor.pb.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>

#include "common/ascii.h"
#include "google/jwt.h"

namespace bizon {
namespace {

namespace ondemand = simdjson::ondemand;
using google::protobuf::DescriptorProto;
using google::protobuf::FieldDescriptorProto;

constexpr size_t kQuotedValueBytes = 64;
constexpr int kMaxDepth = 15;  // BigQuery nests RECORDs 15 levels deep at most.

Status RowError(std::string message) {
  return InvalidArgumentError(std::move(message), FailureClass::kDestination);
}

std::string Upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::optional<ProtoColumnKind> KindOf(std::string_view type) {
  static const std::unordered_map<std::string_view, ProtoColumnKind> kKinds = {
      {"INT64", ProtoColumnKind::kInt64},         {"INTEGER", ProtoColumnKind::kInt64},
      {"FLOAT64", ProtoColumnKind::kDouble},      {"FLOAT", ProtoColumnKind::kDouble},
      {"DOUBLE", ProtoColumnKind::kDouble},       {"BOOL", ProtoColumnKind::kBool},
      {"BOOLEAN", ProtoColumnKind::kBool},        {"STRING", ProtoColumnKind::kString},
      {"GEOGRAPHY", ProtoColumnKind::kString},    {"JSON", ProtoColumnKind::kJson},
      {"BYTES", ProtoColumnKind::kBytes},         {"NUMERIC", ProtoColumnKind::kDecimal},
      {"BIGNUMERIC", ProtoColumnKind::kDecimal},  {"DATETIME", ProtoColumnKind::kCivilText},
      {"TIME", ProtoColumnKind::kCivilText},      {"INTERVAL", ProtoColumnKind::kCivilText},
      {"TIMESTAMP", ProtoColumnKind::kTimestamp}, {"DATE", ProtoColumnKind::kDate},
      {"RECORD", ProtoColumnKind::kRecord},       {"STRUCT", ProtoColumnKind::kRecord},
  };
  auto found = kKinds.find(type);
  if (found == kKinds.end()) return std::nullopt;
  return found->second;
}

FieldDescriptorProto::Type ProtoTypeOf(ProtoColumnKind kind) {
  switch (kind) {
    case ProtoColumnKind::kInt64:
    case ProtoColumnKind::kTimestamp:
      return FieldDescriptorProto::TYPE_INT64;
    case ProtoColumnKind::kDate:
      return FieldDescriptorProto::TYPE_INT32;
    case ProtoColumnKind::kDouble:
      return FieldDescriptorProto::TYPE_DOUBLE;
    case ProtoColumnKind::kBool:
      return FieldDescriptorProto::TYPE_BOOL;
    case ProtoColumnKind::kBytes:
      return FieldDescriptorProto::TYPE_BYTES;
    case ProtoColumnKind::kRecord:
      return FieldDescriptorProto::TYPE_MESSAGE;
    case ProtoColumnKind::kString:
    case ProtoColumnKind::kJson:
    case ProtoColumnKind::kDecimal:
    case ProtoColumnKind::kCivilText:
      break;
  }
  return FieldDescriptorProto::TYPE_STRING;
}

// Protobuf field names are identifiers: a letter or '_', then letters, digits and '_'.
bool IsProtoIdentifier(std::string_view name) {
  if (name.empty()) return false;
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!letter(name.front())) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return letter(c) || (c >= '0' && c <= '9'); });
}

std::string JoinPath(std::string_view parent, std::string_view name) {
  return parent.empty() ? std::string(name) : fmt::format("{}.{}", parent, name);
}

Result<std::vector<ProtoColumn>> MakeColumns(const BigQuerySchema& schema, std::string_view path,
                                             int depth) {
  if (depth > kMaxDepth) {
    return Fail(RowError(fmt::format(
        "BigQuery schema nests RECORD columns deeper than {} levels at {}", kMaxDepth, path)));
  }
  std::vector<ProtoColumn> columns;
  columns.reserve(schema.size());
  for (const BigQueryField& field : schema) {
    std::string column_path = JoinPath(path, field.name);
    if (!IsProtoIdentifier(field.name)) {
      return Fail(RowError(fmt::format(
          "BigQuery column name is not a protobuf field name (letters, digits and '_'): '{}'",
          column_path)));
    }
    ProtoColumn column;
    column.name = field.name;
    column.type = Upper(field.type);
    std::optional<ProtoColumnKind> kind = KindOf(column.type);
    if (!kind) {
      return Fail(
          RowError(fmt::format("BigQuery column {} has a type the Storage Write API "
                               "client cannot encode: '{}'",
                               column_path, field.type)));
    }
    column.kind = *kind;
    std::string mode = Upper(field.mode);
    if (mode == "REQUIRED") {
      column.mode = ProtoColumnMode::kRequired;
    } else if (mode == "REPEATED") {
      column.mode = ProtoColumnMode::kRepeated;
    } else if (mode.empty() || mode == "NULLABLE" || mode == "MODE_UNSPECIFIED") {
      column.mode = ProtoColumnMode::kNullable;
    } else {
      return Fail(RowError(
          fmt::format("BigQuery column {} has an unknown mode: '{}'", column_path, field.mode)));
    }
    column.number = static_cast<int>(columns.size()) + 1;
    if (column.kind == ProtoColumnKind::kRecord) {
      if (field.fields.empty()) {
        return Fail(
            RowError(fmt::format("BigQuery RECORD column {} has no sub-fields", column_path)));
      }
      BIZON_ASSIGN_OR_RETURN(column.fields, MakeColumns(field.fields, column_path, depth + 1));
    }
    columns.push_back(std::move(column));
  }
  return columns;
}

// A nested type's name: not the name of a field or another type at its level.
std::string NestedTypeName(const std::vector<ProtoColumn>& columns, const ProtoColumn& column) {
  std::string name = fmt::format("Record_{}", column.number);
  auto taken = [&](const std::string& candidate) {
    return std::any_of(columns.begin(), columns.end(),
                       [&](const ProtoColumn& other) { return other.name == candidate; });
  };
  while (taken(name)) name.insert(0, "_");
  return name;
}

void FillDescriptor(const std::vector<ProtoColumn>& columns, DescriptorProto& message) {
  for (const ProtoColumn& column : columns) {
    FieldDescriptorProto* field = message.add_field();
    field->set_name(column.name);
    field->set_number(column.number);
    field->set_type(ProtoTypeOf(column.kind));
    switch (column.mode) {
      case ProtoColumnMode::kRequired:
        field->set_label(FieldDescriptorProto::LABEL_REQUIRED);
        break;
      case ProtoColumnMode::kRepeated:
        field->set_label(FieldDescriptorProto::LABEL_REPEATED);
        break;
      case ProtoColumnMode::kNullable:
        field->set_label(FieldDescriptorProto::LABEL_OPTIONAL);
        break;
    }
    if (column.kind == ProtoColumnKind::kRecord) {
      DescriptorProto* nested = message.add_nested_type();
      nested->set_name(NestedTypeName(columns, column));
      FillDescriptor(column.fields, *nested);
      field->set_type_name(nested->name());
    }
  }
}

// --- Wire format ---------------------------------------------------------------------------------

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

void AppendVarint(std::string& out, uint64_t value) {
  char buffer[10];
  size_t length = 0;
  while (value >= 0x80) {
    buffer[length++] = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  buffer[length++] = static_cast<char>(value);
  out.append(buffer, length);
}

void AppendTag(std::string& out, int number, WireType wire_type) {
  AppendVarint(out, (static_cast<uint64_t>(number) << 3) | wire_type);
}

void AppendBytesField(std::string& out, int number, std::string_view bytes) {
  AppendTag(out, number, kLengthDelimited);
  AppendVarint(out, bytes.size());
  out.append(bytes);
}

void AppendInt64Field(std::string& out, int number, int64_t value) {
  AppendTag(out, number, kVarint);
  AppendVarint(out, static_cast<uint64_t>(value));  // Two's complement: negatives take 10 bytes.
}

void AppendDoubleField(std::string& out, int number, double value) {
  AppendTag(out, number, kFixed64);
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  char bytes[8];
  for (char& byte : bytes) {
    byte = static_cast<char>(bits & 0xff);
    bits >>= 8;
  }
  out.append(bytes, sizeof(bytes));
}

// --- Text values ---------------------------------------------------------------------------------

std::string_view TrimRight(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' ||
                           text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

std::string Quote(std::string_view text) {
  if (text.size() <= kQuotedValueBytes) return std::string(text);
  return fmt::format("{}...", text.substr(0, kQuotedValueBytes));
}

std::optional<int64_t> ParseInteger(std::string_view text) {
  int64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;
  auto [stop, error] = std::from_chars(begin, end, value);
  if (error == std::errc() && stop == end && begin != end) return value;
  // An integral number written with a fraction or an exponent (1.0, 1e3), exactly representable.
  double number = 0;
  auto [double_stop, double_error] = std::from_chars(begin, end, number);
  if (double_error != std::errc() || double_stop != end || begin == end) return std::nullopt;
  if (!std::isfinite(number) || std::trunc(number) != number || std::fabs(number) > 0x1p53) {
    return std::nullopt;
  }
  return static_cast<int64_t>(number);
}

std::optional<double> ParseDouble(std::string_view text) {
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (text == "Infinity" || text == "+Infinity") return std::numeric_limits<double>::infinity();
  if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;
  double value = 0;
  auto [stop, error] = std::from_chars(begin, end, value, std::chars_format::general);
  if (begin == end || stop != end) return std::nullopt;
  if (error != std::errc()) return std::nullopt;
  return value;
}

// A decimal number as JSON writes it: what NUMERIC and BIGNUMERIC accept as text.
bool IsDecimalText(std::string_view text) {
  size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  size_t digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    size_t exponent_digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++exponent_digits;
    if (exponent_digits == 0) return false;
  }
  return i == text.size();
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t year, int64_t month, int64_t day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t year_of_era = year - era * 400;
  const int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

bool IsLeapYear(int64_t year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

class TextCursor {
 public:
  explicit TextCursor(std::string_view text) : text_(text) {}
  bool done() const { return position_ == text_.size(); }
  bool Peek(char c) const { return position_ < text_.size() && text_[position_] == c; }
  bool Take(char c) {
    if (!Peek(c)) return false;
    ++position_;
    return true;
  }
  // Between `min` and `max` digits.
  std::optional<int64_t> Digits(size_t min, size_t max, size_t* count = nullptr) {
    int64_t value = 0;
    size_t taken = 0;
    while (taken < max && position_ < text_.size() && text_[position_] >= '0' &&
           text_[position_] <= '9') {
      value = value * 10 + (text_[position_] - '0');
      ++position_;
      ++taken;
    }
    if (count != nullptr) *count = taken;
    if (taken < min) return std::nullopt;
    return value;
  }
  std::string_view Rest() const { return text_.substr(position_); }
  void Skip(size_t bytes) { position_ += bytes; }

 private:
  std::string_view text_;
  size_t position_ = 0;
};

// "YYYY-[M]M-[D]D": days since the epoch, for 0001-01-01 to 9999-12-31.
std::optional<int64_t> ParseDateParts(TextCursor& cursor) {
  auto year = cursor.Digits(4, 4);
  if (!year || !cursor.Take('-')) return std::nullopt;
  auto month = cursor.Digits(1, 2);
  if (!month || !cursor.Take('-')) return std::nullopt;
  auto day = cursor.Digits(1, 2);
  if (!day || *year < 1 || *month < 1 || *month > 12 || *day < 1) return std::nullopt;
  static constexpr std::array<int, 12> kDaysInMonth = {31, 28, 31, 30, 31, 30,
                                                       31, 31, 30, 31, 30, 31};
  int64_t last =
      kDaysInMonth[static_cast<size_t>(*month - 1)] + (*month == 2 && IsLeapYear(*year) ? 1 : 0);
  if (*day > last) return std::nullopt;
  return DaysFromCivil(*year, *month, *day);
}

std::optional<int64_t> ParseDate(std::string_view text) {
  TextCursor cursor(text);
  auto days = ParseDateParts(cursor);
  if (!days || !cursor.done()) return std::nullopt;
  return days;
}

// BigQuery's canonical timestamp text and RFC 3339: "YYYY-[M]M-[D]D[( |T)[H]H:[M]M:[S]S[.F]]
// [zone]", zone Z, UTC or ±H[H][:MM]. Microseconds since the epoch; digits past the sixth
// fraction digit are cut off.
std::optional<int64_t> ParseTimestampText(std::string_view text) {
  TextCursor cursor(text);
  auto days = ParseDateParts(cursor);
  if (!days) return std::nullopt;
  int64_t seconds_of_day = 0;
  int64_t micros = 0;
  if (cursor.Take('T') || cursor.Take('t') || cursor.Take(' ')) {
    auto hour = cursor.Digits(1, 2);
    if (!hour || !cursor.Take(':')) return std::nullopt;
    auto minute = cursor.Digits(1, 2);
    if (!minute || !cursor.Take(':')) return std::nullopt;
    auto second = cursor.Digits(1, 2);
    if (!second || *hour > 23 || *minute > 59 || *second > 59) return std::nullopt;
    seconds_of_day = *hour * 3600 + *minute * 60 + *second;
    if (cursor.Take('.')) {
      size_t count = 0;
      auto fraction = cursor.Digits(1, 6, &count);
      if (!fraction) return std::nullopt;
      micros = *fraction;
      for (size_t i = count; i < 6; ++i) micros *= 10;
      cursor.Digits(0, std::numeric_limits<size_t>::max());  // Past microseconds: cut off.
    }
  }
  int64_t offset_s = 0;
  cursor.Take(' ');
  if (cursor.Rest() == "UTC") {
    cursor.Skip(3);
  } else if (cursor.Take('Z') || cursor.Take('z')) {
    // UTC.
  } else if (cursor.Peek('+') || cursor.Peek('-')) {
    int64_t sign = cursor.Take('-') ? -1 : 1;
    cursor.Take('+');
    auto hours = cursor.Digits(1, 2);
    if (!hours) return std::nullopt;
    int64_t minutes = 0;
    if (cursor.Take(':')) {
      auto parsed = cursor.Digits(2, 2);
      if (!parsed) return std::nullopt;
      minutes = *parsed;
    } else if (!cursor.done()) {
      auto parsed = cursor.Digits(2, 2);
      if (!parsed) return std::nullopt;
      minutes = *parsed;
    }
    if (*hours > 14 || minutes > 59) return std::nullopt;
    offset_s = sign * (*hours * 3600 + minutes * 60);
  }
  if (!cursor.done()) return std::nullopt;
  return ((*days * 86400 + seconds_of_day - offset_s) * 1'000'000) + micros;
}

// 0001-01-01T00:00:00Z and the last microsecond of 9999-12-31, BigQuery's TIMESTAMP range.
constexpr int64_t kMinTimestampUs = -62135596800LL * 1'000'000;
constexpr int64_t kMaxTimestampUs = 253402300799LL * 1'000'000 + 999'999;
constexpr int64_t kMinDate = -719162;
constexpr int64_t kMaxDate = 2932896;

}  // namespace

bool IsProtoRowType(std::string_view type) { return KindOf(Upper(type)).has_value(); }

Result<ProtoRowSchema> ProtoRowSchema::Make(const BigQuerySchema& schema) {
  if (schema.empty()) return Fail(RowError("BigQuery table schema has no columns"));
  ProtoRowSchema result;
  BIZON_ASSIGN_OR_RETURN(result.columns_, MakeColumns(schema, "", 0));
  DescriptorProto message;
  message.set_name("TableRow");
  FillDescriptor(result.columns_, message);
  if (!message.SerializeToString(&result.descriptor_)) {
    return Fail(InternalError("could not serialize the row descriptor"));
  }
  return result;
}

// --- Encoder -------------------------------------------------------------------------------------

struct ProtoRowEncoder::Parser {
  // The columns of one message, with lookups by name.
  struct Level {
    const std::vector<ProtoColumn>* columns = nullptr;
    std::unordered_map<std::string_view, size_t> exact;
    std::unordered_map<std::string, size_t> folded;
    std::vector<std::unique_ptr<Level>> children;  // Per column: its RECORD's level, or null.

    explicit Level(const std::vector<ProtoColumn>& of) : columns(&of), children(of.size()) {
      for (size_t i = 0; i < of.size(); ++i) {
        exact.emplace(of[i].name, i);
        folded.emplace(AsciiLower(of[i].name), i);
        if (of[i].kind == ProtoColumnKind::kRecord) {
          children[i] = std::make_unique<Level>(of[i].fields);
        }
      }
    }

    std::optional<size_t> Find(std::string_view key) const {
      if (auto found = exact.find(key); found != exact.end()) return found->second;
      if (auto found = folded.find(AsciiLower(key)); found != folded.end()) return found->second;
      return std::nullopt;
    }
  };

  explicit Parser(const ProtoRowSchema& schema) : root(schema.columns()) {}

  Status EncodeObject(ondemand::object object, const Level& level, std::string_view path, int depth,
                      std::string& out);
  Status EncodeValue(ondemand::value value, const ProtoColumn& column, const Level* child,
                     const std::string& column_path, int depth, bool in_array, std::string& out);
  Status EncodeScalar(ondemand::value value, ondemand::json_type type, const ProtoColumn& column,
                      const std::string& column_path, std::string& out);
  Result<std::string_view> CompactJson(ondemand::value value, ondemand::json_type type,
                                       const std::string& column_path);

  Level root;
  ondemand::parser parser;
  std::string padded;
  std::string minified;
  std::string row;
  std::array<std::string, kMaxDepth + 2> nested;  // One buffer per RECORD depth.
  std::array<std::vector<uint8_t>, kMaxDepth + 2> seen;
};

namespace {

Status JsonError(simdjson::error_code error, std::string_view path) {
  return RowError(fmt::format("record is not valid JSON{}{}: {}", path.empty() ? "" : " at ", path,
                              simdjson::error_message(error)));
}

std::string_view TypeName(ondemand::json_type type) {
  switch (type) {
    case ondemand::json_type::array:
      return "an array";
    case ondemand::json_type::object:
      return "an object";
    case ondemand::json_type::number:
      return "a number";
    case ondemand::json_type::string:
      return "a string";
    case ondemand::json_type::boolean:
      return "a boolean";
    case ondemand::json_type::null:
      return "null";
  }
  return "a value";
}

// One JSON value met in a scalar column: its text as the column's encoder reads it, and the error
// that says why the column refuses it.
class ScalarInput {
 public:
  ScalarInput(ondemand::value value, ondemand::json_type type, const ProtoColumn& column,
              const std::string& column_path)
      : value_(value), type_(type), column_(column), column_path_(column_path) {}

  ondemand::json_type type() const { return type_; }

  // The value is of a JSON type the column does not take.
  Status Wrong(std::string_view expected) {
    std::string_view raw = TrimRight(value_.raw_json_token());
    return RowError(fmt::format("column {} ({}) expects {}, got {}: {}", column_path_, column_.type,
                                expected, TypeName(type_), Quote(raw)));
  }

  // The value's text is not one the column takes.
  Status Bad(std::string_view expected, std::string_view text) const {
    return RowError(fmt::format("column {} ({}) expects {}, got '{}'", column_path_, column_.type,
                                expected, Quote(text)));
  }

  // The content of a JSON string.
  Result<std::string_view> String() {
    std::string_view text;
    if (auto error = value_.get_string().get(text)) return Fail(JsonError(error, column_path_));
    return text;
  }

  // A number as written, or a string's content; any other JSON type is Wrong(expected).
  Result<std::string_view> NumberOrString(std::string_view expected) {
    if (type_ == ondemand::json_type::number) return TrimRight(value_.raw_json_token());
    if (type_ != ondemand::json_type::string) return Fail(Wrong(expected));
    return String();
  }

 private:
  ondemand::value value_;
  ondemand::json_type type_;
  const ProtoColumn& column_;
  const std::string& column_path_;
};

Status EncodeTimestamp(ScalarInput& input, int number, std::string& out) {
  BIZON_ASSIGN_OR_RETURN(std::string_view text, input.NumberOrString("a timestamp"));
  std::optional<int64_t> micros;
  if (input.type() == ondemand::json_type::string) {
    micros = ParseTimestampText(text);
  } else if (std::optional<int64_t> seconds = ParseInteger(text);
             seconds && std::abs(*seconds) < 400'000'000'000LL) {
    // Seconds since the epoch, as BigQuery's JSON reads a number in a TIMESTAMP column.
    micros = *seconds * 1'000'000;
  } else if (std::optional<double> fractional = ParseDouble(text);
             fractional && std::isfinite(*fractional) && std::fabs(*fractional) < 4e11) {
    micros = static_cast<int64_t>(std::floor(*fractional * 1e6 + 0.5));
  }
  if (!micros || *micros < kMinTimestampUs || *micros > kMaxTimestampUs) {
    return input.Bad(
        "a timestamp between 0001-01-01 and 9999-12-31 (RFC 3339, "
        "'YYYY-MM-DD HH:MM:SS[.ffffff]' or seconds since the epoch)",
        text);
  }
  AppendInt64Field(out, number, *micros);
  return Status::Ok();
}

Status EncodeDate(ScalarInput& input, int number, std::string& out) {
  BIZON_ASSIGN_OR_RETURN(std::string_view text, input.NumberOrString("a date"));
  std::optional<int64_t> days =
      input.type() == ondemand::json_type::string ? ParseDate(text) : ParseInteger(text);
  if (!days || *days < kMinDate || *days > kMaxDate) {
    return input.Bad(
        "a date between 0001-01-01 and 9999-12-31 ('YYYY-MM-DD' or days since the "
        "epoch)",
        text);
  }
  AppendInt64Field(out, number, *days);
  return Status::Ok();
}

}  // namespace

Result<std::string_view> ProtoRowEncoder::Parser::CompactJson(ondemand::value value,
                                                              ondemand::json_type type,
                                                              const std::string& column_path) {
  std::string_view raw;
  simdjson::error_code error = simdjson::SUCCESS;
  if (type == ondemand::json_type::object) {
    ondemand::object object;
    error = value.get_object().get(object);
    if (!error) error = object.raw_json().get(raw);
  } else if (type == ondemand::json_type::array) {
    ondemand::array array;
    error = value.get_array().get(array);
    if (!error) error = array.raw_json().get(raw);
  } else {
    raw = TrimRight(value.raw_json_token());
    return raw;
  }
  if (error) return Fail(JsonError(error, column_path));
  minified.resize(raw.size() + simdjson::SIMDJSON_PADDING);
  size_t length = 0;
  if (auto minify_error = simdjson::minify(raw.data(), raw.size(), minified.data(), length)) {
    return Fail(JsonError(minify_error, column_path));
  }
  return std::string_view(minified.data(), length);
}

Status ProtoRowEncoder::Parser::EncodeScalar(ondemand::value value, ondemand::json_type type,
                                             const ProtoColumn& column,
                                             const std::string& column_path, std::string& out) {
  ScalarInput input(value, type, column, column_path);
  const int number = column.number;
  switch (column.kind) {
    case ProtoColumnKind::kInt64: {
      BIZON_ASSIGN_OR_RETURN(std::string_view text, input.NumberOrString("an integer"));
      std::optional<int64_t> parsed = ParseInteger(text);
      if (!parsed) return input.Bad("a 64-bit integer", text);
      AppendInt64Field(out, number, *parsed);
      return Status::Ok();
    }
    case ProtoColumnKind::kDouble: {
      BIZON_ASSIGN_OR_RETURN(std::string_view text, input.NumberOrString("a number"));
      std::optional<double> parsed = ParseDouble(text);
      if (!parsed) return input.Bad("a number", text);
      AppendDoubleField(out, number, *parsed);
      return Status::Ok();
    }
    case ProtoColumnKind::kBool: {
      if (type != ondemand::json_type::boolean) return input.Wrong("true or false");
      bool flag = false;
      if (auto error = value.get_bool().get(flag)) return JsonError(error, column_path);
      AppendTag(out, number, kVarint);
      out.push_back(flag ? '\1' : '\0');
      return Status::Ok();
    }
    case ProtoColumnKind::kString:
    case ProtoColumnKind::kJson: {
      std::string_view text;
      if (type == ondemand::json_type::string) {
        BIZON_ASSIGN_OR_RETURN(text, input.String());
      } else if (type == ondemand::json_type::object || type == ondemand::json_type::array ||
                 column.kind == ProtoColumnKind::kJson) {
        BIZON_ASSIGN_OR_RETURN(text, CompactJson(value, type, column_path));
      } else {
        return input.Wrong("a string");
      }
      AppendBytesField(out, number, text);
      return Status::Ok();
    }
    case ProtoColumnKind::kBytes: {
      if (type != ondemand::json_type::string) return input.Wrong("a base64 string");
      BIZON_ASSIGN_OR_RETURN(std::string_view text, input.String());
      std::optional<std::string> bytes = Base64Decode(text);
      if (!bytes) return input.Bad("a base64 string", text);
      AppendBytesField(out, number, *bytes);
      return Status::Ok();
    }
    case ProtoColumnKind::kDecimal: {
      BIZON_ASSIGN_OR_RETURN(std::string_view text, input.NumberOrString("a decimal number"));
      if (!IsDecimalText(text)) return input.Bad("a decimal number", text);
      AppendBytesField(out, number, text);
      return Status::Ok();
    }
    case ProtoColumnKind::kCivilText: {
      if (type != ondemand::json_type::string) return input.Wrong("a string");
      BIZON_ASSIGN_OR_RETURN(std::string_view text, input.String());
      AppendBytesField(out, number, text);
      return Status::Ok();
    }
    case ProtoColumnKind::kTimestamp:
      return EncodeTimestamp(input, number, out);
    case ProtoColumnKind::kDate:
      return EncodeDate(input, number, out);
    case ProtoColumnKind::kRecord:
      break;
  }
  return input.Wrong("an object");
}

Status ProtoRowEncoder::Parser::EncodeValue(ondemand::value value, const ProtoColumn& column,
                                            const Level* child, const std::string& column_path,
                                            int depth, bool in_array, std::string& out) {
  ondemand::json_type type;
  if (auto error = value.type().get(type)) return JsonError(error, column_path);
  if (column.mode == ProtoColumnMode::kRepeated && !in_array) {
    if (type == ondemand::json_type::null) return Status::Ok();  // An empty array.
    if (type != ondemand::json_type::array) {
      return RowError(fmt::format("column {} (REPEATED {}) expects an array, got {}: {}",
                                  column_path, column.type, TypeName(type),
                                  Quote(TrimRight(value.raw_json_token()))));
    }
    ondemand::array array;
    if (auto error = value.get_array().get(array)) return JsonError(error, column_path);
    size_t index = 0;
    for (auto element : array) {
      ondemand::value item;
      if (auto error = element.get(item)) return JsonError(error, column_path);
      std::string item_path = fmt::format("{}[{}]", column_path, index++);
      ondemand::json_type item_type;
      if (auto error = item.type().get(item_type)) return JsonError(error, item_path);
      if (item_type == ondemand::json_type::null) {
        return RowError(fmt::format(
            "column {} (REPEATED {}) holds a null element; BigQuery arrays cannot hold NULL",
            item_path, column.type));
      }
      BIZON_RETURN_IF_ERROR(EncodeValue(item, column, child, item_path, depth, true, out));
    }
    return Status::Ok();
  }
  if (column.kind != ProtoColumnKind::kRecord) {
    return EncodeScalar(value, type, column, column_path, out);
  }
  if (type != ondemand::json_type::object) {
    return RowError(fmt::format("column {} (RECORD) expects an object, got {}: {}", column_path,
                                TypeName(type), Quote(TrimRight(value.raw_json_token()))));
  }
  ondemand::object object;
  if (auto error = value.get_object().get(object)) return JsonError(error, column_path);
  std::string& buffer = nested[static_cast<size_t>(depth) + 1];
  buffer.clear();
  BIZON_RETURN_IF_ERROR(EncodeObject(object, *child, column_path, depth + 1, buffer));
  AppendBytesField(out, column.number, buffer);
  return Status::Ok();
}

Status ProtoRowEncoder::Parser::EncodeObject(ondemand::object object, const Level& level,
                                             std::string_view path, int depth, std::string& out) {
  const std::vector<ProtoColumn>& columns = *level.columns;
  std::vector<uint8_t>& present = seen[static_cast<size_t>(depth)];
  present.assign(columns.size(), 0);
  for (auto field : object) {
    std::string_view key;
    if (auto error = field.unescaped_key().get(key)) return JsonError(error, path);
    std::optional<size_t> index = level.Find(key);
    if (!index) {
      return RowError(fmt::format("record has a field that is not a column of the table: {}",
                                  JoinPath(path, key)));
    }
    const ProtoColumn& column = columns[*index];
    std::string column_path = JoinPath(path, column.name);
    if (present[*index]) {
      return RowError(fmt::format("record has column {} twice", column_path));
    }
    ondemand::value value;
    if (auto error = field.value().get(value)) return JsonError(error, column_path);
    ondemand::json_type type;
    if (auto error = value.type().get(type)) return JsonError(error, column_path);
    if (type == ondemand::json_type::null) {
      if (column.mode == ProtoColumnMode::kRequired) {
        return RowError(
            fmt::format("record has null in REQUIRED column {} ({})", column_path, column.type));
      }
      continue;  // Unset: NULL, or an empty array for a REPEATED column.
    }
    present[*index] = 1;
    BIZON_RETURN_IF_ERROR(
        EncodeValue(value, column, level.children[*index].get(), column_path, depth, false, out));
    // A nested RECORD reused `seen` one level down; this level's flags are untouched.
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].mode == ProtoColumnMode::kRequired && !present[i]) {
      return RowError(fmt::format("record lacks REQUIRED column {} ({})",
                                  JoinPath(path, columns[i].name), columns[i].type));
    }
  }
  return Status::Ok();
}

ProtoRowEncoder::ProtoRowEncoder(const ProtoRowSchema& schema)
    : parser_(std::make_unique<Parser>(schema)) {}

ProtoRowEncoder::~ProtoRowEncoder() = default;

Status ProtoRowEncoder::Encode(std::string_view json, std::string& out) {
  Parser& parser = *parser_;
  parser.padded.assign(json);
  parser.padded.append(simdjson::SIMDJSON_PADDING, '\0');
  ondemand::document document;
  if (auto error = parser.parser.iterate(parser.padded.data(), json.size(), parser.padded.size())
                       .get(document)) {
    return JsonError(error, "");
  }
  ondemand::object object;
  if (auto error = document.get_object().get(object)) {
    ondemand::json_type type = ondemand::json_type::null;
    if (document.type().get(type) || type == ondemand::json_type::object) {
      return JsonError(error, "");
    }
    return RowError(fmt::format("record is {}, not a JSON object", TypeName(type)));
  }
  parser.row.clear();
  BIZON_RETURN_IF_ERROR(parser.EncodeObject(object, parser.root, "", 0, parser.row));
  // Past the object the document must be at its end: a location there is trailing content.
  if (document.current_location().error() == simdjson::SUCCESS) {
    return RowError("record is not valid JSON: trailing content after the object");
  }
  out.append(parser.row);
  return Status::Ok();
}

}  // namespace bizon
