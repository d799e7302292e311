#include "connectors/sources/kafka/avro_decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "bizon/clock.h"
#include "connectors/sources/kafka/kafka_message.h"

namespace bizon::kafka {
namespace {

constexpr int kMaxSchemaDepth = 256;
constexpr int kMaxValueDepth = 512;
// Array items of a type encoded in zero bytes (null, a record without fields) one datum may
// hold. Real schemas do not put many of them in one value; the bound keeps a few bytes of data
// from claiming 2^40 of them (a value of 64 Ki nulls is 320 KB of JSON).
constexpr int64_t kMaxItemsWithoutBytes = int64_t{1} << 16;
// Far above any real decimal (SQL databases stop at 38 to 1000 digits).
constexpr int64_t kMaxDecimalScale = 1000;
constexpr int64_t kMicrosPerDay = int64_t{86'400} * 1'000'000;

/// The decimal digits of a two's complement big-endian integer, with a '-' when negative.
std::string BigEndianToDecimal(std::string_view bytes) {
  std::vector<uint8_t> magnitude(bytes.begin(), bytes.end());
  bool negative = !magnitude.empty() && (magnitude[0] & 0x80) != 0;
  if (negative) {
    // Two's complement negation: invert, then add one.
    for (uint8_t& b : magnitude) b = static_cast<uint8_t>(~b);
    for (size_t i = magnitude.size(); i-- > 0;) {
      if (++magnitude[i] != 0) break;
    }
  }
  std::string digits;
  size_t start = 0;
  while (start < magnitude.size()) {
    unsigned remainder = 0;
    for (size_t i = start; i < magnitude.size(); ++i) {
      unsigned current = (remainder << 8) | magnitude[i];
      magnitude[i] = static_cast<uint8_t>(current / 10);
      remainder = current % 10;
    }
    digits.push_back(static_cast<char>('0' + remainder));
    while (start < magnitude.size() && magnitude[start] == 0) ++start;
  }
  if (digits.empty()) digits = "0";
  if (negative) digits.push_back('-');
  std::reverse(digits.begin(), digits.end());
  return digits;
}

std::string DecimalText(std::string_view bytes, int scale) {
  std::string digits = BigEndianToDecimal(bytes);
  bool negative = digits[0] == '-';
  if (negative) digits.erase(0, 1);
  if (scale > 0) {
    if (digits.size() <= static_cast<size_t>(scale)) {
      digits.insert(0, static_cast<size_t>(scale) + 1 - digits.size(), '0');
    }
    digits.insert(digits.size() - static_cast<size_t>(scale), ".");
  }
  return negative ? "-" + digits : digits;
}

/// One code point U+0000-U+00FF per byte, as Avro's own JSON encoding writes bytes.
void AppendBytesAsJson(std::string& out, std::string_view bytes) {
  std::string text;
  text.reserve(bytes.size() * 2);
  for (char c : bytes) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80) {
      text.push_back(c);
    } else {
      text.push_back(static_cast<char>(0xC0 | (byte >> 6)));
      text.push_back(static_cast<char>(0x80 | (byte & 0x3F)));
    }
  }
  AppendJsonString(out, text);
}

void AppendTimeOfDay(std::string& out, int64_t micros) {
  micros = ((micros % kMicrosPerDay) + kMicrosPerDay) % kMicrosPerDay;
  int64_t seconds = micros / 1'000'000;
  fmt::format_to(std::back_inserter(out), "\"{:02}:{:02}:{:02}.{:06}\"", seconds / 3600,
                 (seconds / 60) % 60, seconds % 60, micros % 1'000'000);
}

}  // namespace

class AvroDecoder::Compiler {
 public:
  explicit Compiler(AvroDecoder& decoder) : decoder_(decoder) {}

  Result<int> Parse(const Value& schema, const std::string& space, int depth) {
    if (depth > kMaxSchemaDepth) return Error("the schema nests too deeply");
    if (schema.is_string()) return ParseName(schema.AsString(), space, nullptr);
    if (schema.is_list()) {
      Node node{.type = Type::kUnion};
      for (const Value& branch : schema.AsList()) {
        BIZON_ASSIGN_OR_RETURN(int child, Parse(branch, space, depth + 1));
        node.children.push_back(child);
      }
      if (node.children.empty()) return Error("a union has no branches");
      return Add(std::move(node));
    }
    if (!schema.is_map()) return Error(fmt::format("unexpected schema {}", schema.ToJson()));
    const Value* type = schema.Find("type");
    if (type == nullptr) return Error("an object schema has no \"type\"");
    if (!type->is_string()) return Parse(*type, space, depth + 1);
    const std::string& name = type->AsString();
    if (name == "record" || name == "error") return ParseRecord(schema, space, depth);
    if (name == "enum") return ParseEnum(schema, space);
    if (name == "fixed") return ParseFixed(schema, space);
    if (name == "array" || name == "map") {
      const Value* child_schema = schema.Find(name == "array" ? "items" : "values");
      if (child_schema == nullptr) {
        return Error(
            fmt::format("an {} schema has no \"{}\"", name, name == "array" ? "items" : "values"));
      }
      BIZON_ASSIGN_OR_RETURN(int child, Parse(*child_schema, space, depth + 1));
      return Add({.type = name == "array" ? Type::kArray : Type::kMap, .children = {child}});
    }
    return ParseName(name, space, &schema);
  }

 private:
  static std::unexpected<Status> Error(std::string message) {
    return Fail(InvalidArgumentError("invalid Avro schema: " + std::move(message)));
  }

  int Add(Node node) {
    decoder_.nodes_.push_back(std::move(node));
    return static_cast<int>(decoder_.nodes_.size() - 1);
  }

  /// A primitive type name (with the attributes of its object form, for logical types) or a
  /// reference to a named type defined earlier.
  Result<int> ParseName(const std::string& name, const std::string& space,
                        const Value* attributes) {
    static const std::map<std::string, Type, std::less<>> kPrimitives = {
        {"null", Type::kNull},   {"boolean", Type::kBoolean}, {"int", Type::kInt},
        {"long", Type::kLong},   {"float", Type::kFloat},     {"double", Type::kDouble},
        {"bytes", Type::kBytes}, {"string", Type::kString}};
    if (auto primitive = kPrimitives.find(name); primitive != kPrimitives.end()) {
      Node node{.type = primitive->second};
      if (attributes != nullptr) BIZON_RETURN_IF_ERROR(ApplyLogicalType(node, *attributes));
      return Add(std::move(node));
    }
    if (auto found = named_.find(name); found != named_.end()) return found->second;
    if (name.find('.') == std::string::npos && !space.empty()) {
      if (auto found = named_.find(space + "." + name); found != named_.end()) return found->second;
    }
    return Error(fmt::format("unknown type '{}'", name));
  }

  static Status ApplyLogicalType(Node& node, const Value& attributes) {
    std::string logical = attributes.GetString("logicalType");
    if (logical.empty()) return Status::Ok();
    // A logical type on the wrong base type is ignored, as the Avro specification says.
    bool is_int = node.type == Type::kInt;
    bool is_long = node.type == Type::kLong;
    if (logical == "timestamp-millis" && is_long) node.logical = Logical::kTimestampMillis;
    if (logical == "timestamp-micros" && is_long) node.logical = Logical::kTimestampMicros;
    if (logical == "local-timestamp-millis" && is_long) {
      node.logical = Logical::kLocalTimestampMillis;
    }
    if (logical == "local-timestamp-micros" && is_long) {
      node.logical = Logical::kLocalTimestampMicros;
    }
    if (logical == "date" && is_int) node.logical = Logical::kDate;
    if (logical == "time-millis" && is_int) node.logical = Logical::kTimeMillis;
    if (logical == "time-micros" && is_long) node.logical = Logical::kTimeMicros;
    if (logical == "decimal" && (node.type == Type::kBytes || node.type == Type::kFixed)) {
      // Each value is padded to `scale` digits: a schema's scale of 2^31 made every value a 2 GB
      // allocation (seen reading the code; fuzz/fuzz_avro_decoder reproduces it).
      int64_t scale = attributes.GetInteger("scale", 0);
      if (scale > kMaxDecimalScale) {
        return Error(fmt::format("a decimal's scale {} is above the {} digits supported", scale,
                                 kMaxDecimalScale));
      }
      node.logical = Logical::kDecimal;
      node.decimal_scale = static_cast<int>(std::max<int64_t>(scale, 0));
    }
    return Status::Ok();
  }

  /// Registers the full name of a named type; returns its namespace for the names inside it.
  Result<std::string> Name(const Value& schema, const std::string& space, int node) {
    std::string name = schema.GetString("name");
    if (name.empty()) return Error("a named type has no \"name\"");
    std::string full = name;
    std::string own_space = space;
    if (name.find('.') != std::string::npos) {
      own_space = name.substr(0, name.rfind('.'));
    } else {
      if (const Value* ns = schema.Find("namespace"); ns != nullptr && ns->is_string()) {
        own_space = ns->AsString();
      }
      if (!own_space.empty()) full = own_space + "." + name;
    }
    if (!named_.emplace(full, node).second) {
      return Error(fmt::format("the type '{}' is defined twice", full));
    }
    return own_space;
  }

  Result<int> ParseRecord(const Value& schema, const std::string& space, int depth) {
    int index = Add({.type = Type::kRecord});
    BIZON_ASSIGN_OR_RETURN(std::string own_space, Name(schema, space, index));
    const Value* fields = schema.Find("fields");
    if (fields == nullptr || !fields->is_list()) {
      return Error(fmt::format("record '{}' has no \"fields\" list", schema.GetString("name")));
    }
    std::vector<Field> parsed;
    for (const Value& field : fields->AsList()) {
      const Value* field_type = field.Find("type");
      std::string field_name = field.GetString("name");
      if (field_name.empty() || field_type == nullptr) {
        return Error(
            fmt::format("a field of record '{}' lacks a name or a type", schema.GetString("name")));
      }
      BIZON_ASSIGN_OR_RETURN(int child, Parse(*field_type, own_space, depth + 1));
      std::string key;
      AppendJsonString(key, field_name);
      key.push_back(':');
      parsed.push_back({std::move(key), child});
    }
    // Index, not reference: parsing the fields grew the node table.
    decoder_.nodes_[static_cast<size_t>(index)].fields = std::move(parsed);
    return index;
  }

  Result<int> ParseEnum(const Value& schema, const std::string& space) {
    int index = Add({.type = Type::kEnum});
    BIZON_ASSIGN_OR_RETURN(std::string own_space, Name(schema, space, index));
    (void)own_space;  // Enum and fixed hold no names of their own.
    const Value* symbols = schema.Find("symbols");
    if (symbols == nullptr || !symbols->is_list() || symbols->AsList().empty()) {
      return Error(fmt::format("enum '{}' has no symbols", schema.GetString("name")));
    }
    for (const Value& symbol : symbols->AsList()) {
      std::string quoted;
      AppendJsonString(quoted, symbol.ToDisplayString());
      decoder_.nodes_[static_cast<size_t>(index)].symbols.push_back(std::move(quoted));
    }
    return index;
  }

  Result<int> ParseFixed(const Value& schema, const std::string& space) {
    int index = Add({.type = Type::kFixed});
    BIZON_ASSIGN_OR_RETURN(std::string own_space, Name(schema, space, index));
    (void)own_space;  // Enum and fixed hold no names of their own.
    const Value* size = schema.Find("size");
    if (size == nullptr || !size->is_integer() || size->AsInteger() < 0) {
      return Error(fmt::format("fixed '{}' has no valid size", schema.GetString("name")));
    }
    Node& node = decoder_.nodes_[static_cast<size_t>(index)];
    node.fixed_size = size->AsInteger();
    BIZON_RETURN_IF_ERROR(ApplyLogicalType(node, schema));
    return index;
  }

  AvroDecoder& decoder_;
  std::map<std::string, int, std::less<>> named_;
};

class AvroDecoder::Reader {
 public:
  Reader(const AvroDecoder& decoder, std::string_view data) : decoder_(decoder), data_(data) {}

  Status Read(int index, std::string& out, int depth) {
    if (depth > kMaxValueDepth) return Error("the value nests too deeply");
    const Node& node = decoder_.nodes_[static_cast<size_t>(index)];
    switch (node.type) {
      case Type::kNull:
        out += "null";
        return Status::Ok();
      case Type::kBoolean: {
        if (pos_ >= data_.size()) return Truncated();
        out += data_[pos_++] != 0 ? "true" : "false";
        return Status::Ok();
      }
      case Type::kInt:
      case Type::kLong: {
        BIZON_ASSIGN_OR_RETURN(int64_t number, ReadLong());
        return AppendInteger(node, number, out);
      }
      case Type::kFloat: {
        if (pos_ + 4 > data_.size()) return Truncated();
        float number;
        std::memcpy(&number, data_.data() + pos_, 4);  // Little-endian, as the host.
        pos_ += 4;
        AppendDouble(static_cast<double>(number), out);
        return Status::Ok();
      }
      case Type::kDouble: {
        if (pos_ + 8 > data_.size()) return Truncated();
        double number;
        std::memcpy(&number, data_.data() + pos_, 8);
        pos_ += 8;
        AppendDouble(number, out);
        return Status::Ok();
      }
      case Type::kBytes:
      case Type::kString: {
        BIZON_ASSIGN_OR_RETURN(std::string_view bytes, ReadBytes());
        AppendText(node, bytes, out);
        return Status::Ok();
      }
      case Type::kFixed: {
        if (pos_ + static_cast<size_t>(node.fixed_size) > data_.size()) return Truncated();
        std::string_view bytes = data_.substr(pos_, static_cast<size_t>(node.fixed_size));
        pos_ += static_cast<size_t>(node.fixed_size);
        AppendText(node, bytes, out);
        return Status::Ok();
      }
      case Type::kEnum: {
        BIZON_ASSIGN_OR_RETURN(int64_t symbol, ReadLong());
        if (symbol < 0 || static_cast<size_t>(symbol) >= node.symbols.size()) {
          return Error(fmt::format("enum index {} is out of range", symbol));
        }
        out += node.symbols[static_cast<size_t>(symbol)];
        return Status::Ok();
      }
      case Type::kUnion: {
        BIZON_ASSIGN_OR_RETURN(int64_t branch, ReadLong());
        if (branch < 0 || static_cast<size_t>(branch) >= node.children.size()) {
          return Error(fmt::format("union branch {} is out of range", branch));
        }
        return Read(node.children[static_cast<size_t>(branch)], out, depth + 1);
      }
      case Type::kRecord: {
        out.push_back('{');
        for (size_t i = 0; i < node.fields.size(); ++i) {
          if (i > 0) out.push_back(',');
          out += node.fields[i].key;
          BIZON_RETURN_IF_ERROR(Read(node.fields[i].node, out, depth + 1));
        }
        out.push_back('}');
        return Status::Ok();
      }
      case Type::kArray:
      case Type::kMap:
        return ReadBlocks(node, out, depth);
    }
    return Error("unknown node");
  }

  size_t position() const { return pos_; }

 private:
  Status Error(std::string message) const {
    return InvalidArgumentError(
        fmt::format("cannot decode the Avro value at byte {}: {}", pos_, std::move(message)));
  }
  Status Truncated() const { return Error("the data ends early"); }

  Result<int64_t> ReadLong() {
    uint64_t encoded = 0;
    int shift = 0;
    while (true) {
      if (pos_ >= data_.size()) return Fail(Truncated());
      auto byte = static_cast<uint8_t>(data_[pos_++]);
      encoded |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) break;
      shift += 7;
      if (shift > 63) return Fail(Error("a variable-length integer is longer than 10 bytes"));
    }
    return static_cast<int64_t>(encoded >> 1) ^ -static_cast<int64_t>(encoded & 1);
  }

  Result<std::string_view> ReadBytes() {
    BIZON_ASSIGN_OR_RETURN(int64_t length, ReadLong());
    if (length < 0) return Fail(Error(fmt::format("negative length {}", length)));
    if (static_cast<uint64_t>(length) > data_.size() - pos_) return Fail(Truncated());
    std::string_view bytes = data_.substr(pos_, static_cast<size_t>(length));
    pos_ += static_cast<size_t>(length);
    return bytes;
  }

  static void AppendDouble(double number, std::string& out) {
    if (!std::isfinite(number)) {
      out += "null";  // JSON has no NaN or infinity.
      return;
    }
    fmt::format_to(std::back_inserter(out), "{}", number);
  }

  /// Integers, and the logical types on int and long. A value whose microseconds do not fit in
  /// 64 bits is an error, as the original's reader fails on a year it cannot represent.
  Status AppendInteger(const Node& node, int64_t number, std::string& out) const {
    int64_t factor = 1;
    if (node.logical == Logical::kTimestampMillis || node.logical == Logical::kTimeMillis ||
        node.logical == Logical::kLocalTimestampMillis) {
      factor = 1000;
    } else if (node.logical == Logical::kDate) {
      factor = kMicrosPerDay;
    }
    int64_t micros = 0;
    if (__builtin_mul_overflow(number, factor, &micros)) {
      return Error(fmt::format("the value {} is out of range for its logical type", number));
    }
    switch (node.logical) {
      case Logical::kTimestampMillis:
      case Logical::kTimestampMicros:
        AppendJsonString(out, FormatIsoTimestamp(micros));
        break;
      case Logical::kLocalTimestampMillis:
      case Logical::kLocalTimestampMicros: {
        std::string text = FormatIsoTimestamp(micros);
        if (!text.empty() && text.back() == 'Z') text.pop_back();
        AppendJsonString(out, text);
        break;
      }
      case Logical::kDate: {
        UtcTime day = SplitUtc(micros);
        fmt::format_to(std::back_inserter(out), "\"{:04}-{:02}-{:02}\"", day.year, day.month,
                       day.day);
        break;
      }
      case Logical::kTimeMillis:
      case Logical::kTimeMicros:
        AppendTimeOfDay(out, micros);
        break;
      default:
        fmt::format_to(std::back_inserter(out), "{}", number);
    }
    return Status::Ok();
  }

  static void AppendText(const Node& node, std::string_view bytes, std::string& out) {
    if (node.logical == Logical::kDecimal) {
      AppendJsonString(out, DecimalText(bytes, node.decimal_scale));
    } else if (node.type == Type::kString) {
      if (IsValidUtf8(bytes)) {
        AppendJsonString(out, bytes);
      } else {
        AppendJsonString(out, RepairUtf8(bytes));
      }
    } else {
      AppendBytesAsJson(out, bytes);
    }
  }

  Status ReadBlocks(const Node& node, std::string& out, int depth) {
    bool is_map = node.type == Type::kMap;
    out.push_back(is_map ? '{' : '[');
    bool first = true;
    while (true) {
      BIZON_ASSIGN_OR_RETURN(int64_t count, ReadLong());
      if (count == 0) break;
      if (count < 0) {
        if (count == std::numeric_limits<int64_t>::min()) {
          return Error(fmt::format("block count {} is out of range", count));
        }
        count = -count;
        BIZON_ASSIGN_OR_RETURN(int64_t block_bytes, ReadLong());
        (void)block_bytes;  // Only useful to skip a block unread.
      }
      for (int64_t i = 0; i < count; ++i) {
        size_t item_start = pos_;
        if (!first) out.push_back(',');
        first = false;
        if (is_map) {
          BIZON_ASSIGN_OR_RETURN(std::string_view key, ReadBytes());
          AppendJsonString(out, IsValidUtf8(key) ? std::string(key) : RepairUtf8(key));
          out.push_back(':');
        }
        BIZON_RETURN_IF_ERROR(Read(node.children[0], out, depth + 1));
        // Items that take no bytes (null, an empty record) would let a count from the data
        // alone write output without end (found by fuzz/fuzz_avro_decoder).
        if (pos_ == item_start && ++items_without_bytes_ > kMaxItemsWithoutBytes) {
          return Error(
              fmt::format("more than {} array items take no bytes", kMaxItemsWithoutBytes));
        }
      }
    }
    out.push_back(is_map ? '}' : ']');
    return Status::Ok();
  }

  const AvroDecoder& decoder_;
  std::string_view data_;
  size_t pos_ = 0;
  int64_t items_without_bytes_ = 0;
};

Result<AvroDecoder> AvroDecoder::Compile(std::string_view schema_json) {
  auto schema = Value::FromJson(schema_json);
  if (!schema) {
    return Fail(InvalidArgumentError("invalid Avro schema: not JSON: " + schema.error().message()));
  }
  return CompileParsed(*schema);
}

Result<AvroDecoder> AvroDecoder::CompileParsed(const Value& schema) {
  AvroDecoder decoder;
  Compiler compiler(decoder);
  BIZON_ASSIGN_OR_RETURN(decoder.root_, compiler.Parse(schema, "", 0));
  return decoder;
}

Status AvroDecoder::Decode(std::string_view data, std::string& out) const {
  Reader reader(*this, data);
  return reader.Read(root_, out, 0);
}

}  // namespace bizon::kafka
