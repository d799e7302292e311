#include "connectors/sources/kafka/kafka_message.h"

#include <fmt/format.h>

#include <charconv>
#include <cstring>

#include "bizon/value.h"
#include "common/json_scan.h"

namespace bizon::kafka {
namespace {

// A message that cannot be decoded is the source's data at fault, not the pipeline's config.
Status MessageError(std::string message) {
  return {StatusCode::kInvalidArgument, std::move(message), FailureClass::kSource};
}

constexpr int kMaxJsonDepth = 512;

/// Length of the valid UTF-8 sequence at `data[i]`, or 0 when it is invalid.
int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// The code unit of a \uXXXX escape starting at text[i] (the backslash), or -1.
int EscapedUnit(std::string_view text, size_t i) {
  if (i + 6 > text.size() || text[i] != '\\' || text[i + 1] != 'u') return -1;
  int unit = 0;
  for (size_t k = 2; k < 6; ++k) {
    int digit = HexDigit(text[i + k]);
    if (digit < 0) return -1;
    unit = unit * 16 + digit;
  }
  return unit;
}

bool IsHighSurrogate(int unit) { return unit >= 0xD800 && unit <= 0xDBFF; }
bool IsLowSurrogate(int unit) { return unit >= 0xDC00 && unit <= 0xDFFF; }

class JsonChecker {
 public:
  explicit JsonChecker(std::string_view text) : text_(text) {}

  JsonCheck Run() {
    SkipSpace();
    if (!Value(0)) return result_;
    SkipSpace();
    if (pos_ != text_.size()) return Problem(JsonProblem::kSyntax);
    return {};
  }

 private:
  JsonCheck Problem(JsonProblem problem) {
    if (result_.ok()) result_ = {problem, pos_};
    return result_;
  }
  bool Fail(JsonProblem problem = JsonProblem::kSyntax) {
    Problem(problem);
    return false;
  }

  void SkipSpace() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
      ++pos_;
    }
  }

  bool Literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return Fail();
    pos_ += word.size();
    return true;
  }

  bool Digits() {
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    return pos_ > start || Fail();
  }

  bool Number() {
    if (text_[pos_] == '-') ++pos_;
    if (pos_ >= text_.size()) return Fail();
    if (text_[pos_] == '0') {
      ++pos_;
    } else if (!Digits()) {
      return false;
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (!Digits()) return false;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (!Digits()) return false;
    }
    return true;
  }

  bool String() {
    ++pos_;  // Opening quote.
    while (pos_ < text_.size()) {
      // Straight to the next byte that ends or escapes the string, or may not be in it.
      pos_ = json_scan::FindSpecial(text_, pos_);
      if (pos_ >= text_.size()) break;
      unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return Fail(JsonProblem::kControlCharacter);
      if (pos_ + 1 >= text_.size()) return Fail();
      char escaped = text_[pos_ + 1];
      if (escaped == 'u') {
        int unit = EscapedUnit(text_, pos_);
        if (unit < 0) return Fail();
        if (IsHighSurrogate(unit)) {
          int next = EscapedUnit(text_, pos_ + 6);
          if (!IsLowSurrogate(next)) return Fail(JsonProblem::kLoneSurrogate);
          pos_ += 12;
        } else if (IsLowSurrogate(unit)) {
          return Fail(JsonProblem::kLoneSurrogate);
        } else {
          pos_ += 6;
        }
        continue;
      }
      if (std::strchr("\"\\/bfnrt", escaped) == nullptr || escaped == '\0') return Fail();
      pos_ += 2;
    }
    return Fail();
  }

  bool Value(int depth) {
    if (pos_ >= text_.size()) return Fail();
    switch (text_[pos_]) {
      case '{':
        return Container(depth, '}', /*object=*/true);
      case '[':
        return Container(depth, ']', /*object=*/false);
      case '"':
        return String();
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
      default:
        if (text_[pos_] == '-' || (text_[pos_] >= '0' && text_[pos_] <= '9')) return Number();
        return Fail();
    }
  }

  bool Container(int depth, char close, bool object) {
    if (depth >= kMaxJsonDepth) return Fail();
    ++pos_;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == close) {
      ++pos_;
      return true;
    }
    while (true) {
      if (object) {
        if (pos_ >= text_.size() || text_[pos_] != '"') return Fail();
        if (!String()) return false;
        SkipSpace();
        if (pos_ >= text_.size() || text_[pos_] != ':') return Fail();
        ++pos_;
        SkipSpace();
      }
      if (!Value(depth + 1)) return false;
      SkipSpace();
      if (pos_ >= text_.size()) return Fail();
      if (text_[pos_] == ',') {
        ++pos_;
        SkipSpace();
        continue;
      }
      if (text_[pos_] == close) {
        ++pos_;
        return true;
      }
      return Fail();
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  JsonCheck result_;
};

std::string_view ProblemText(JsonProblem problem) {
  switch (problem) {
    case JsonProblem::kNone:
      return "no problem";
    case JsonProblem::kSyntax:
      return "invalid JSON";
    case JsonProblem::kLoneSurrogate:
      return "a lone surrogate escape";
    case JsonProblem::kControlCharacter:
      return "a control character inside a string";
  }
  return "invalid JSON";
}

}  // namespace

Result<SchemaHeader> ParseSchemaHeader(std::string_view value) {
  if (value.size() < 5) {
    return Fail(MessageError(fmt::format(
        "Invalid message. Missing schema id: the value has {} bytes, a schema registry header "
        "needs at least 5",
        value.size())));
  }
  auto byte = [&](size_t i) { return static_cast<uint64_t>(static_cast<unsigned char>(value[i])); };
  if (byte(0) != 0) {
    return Fail(MessageError(
        fmt::format("Unexpected magic byte {}: the message was not produced with a Schema "
                    "Registry serializer",
                    byte(0))));
  }
  uint64_t id = (byte(1) << 24) | (byte(2) << 16) | (byte(3) << 8) | byte(4);
  if (id != 0) return SchemaHeader{.schema_id = static_cast<int64_t>(id), .length = 5};
  if (value.size() < 9) {
    return Fail(MessageError(
        fmt::format("Invalid message. Missing schema id: the 4-byte id is 0 and the value has {} "
                    "bytes, too few for an 8-byte global id",
                    value.size())));
  }
  uint64_t global_id = 0;
  for (size_t i = 1; i <= 8; ++i) global_id = (global_id << 8) | byte(i);
  return SchemaHeader{.schema_id = static_cast<int64_t>(global_id), .length = 9};
}

JsonCheck CheckJson(std::string_view text) { return JsonChecker(text).Run(); }

std::string ReplaceLoneSurrogates(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '\\' || i + 1 >= text.size()) {
      out.push_back(text[i++]);
      continue;
    }
    int unit = EscapedUnit(text, i);
    if (unit < 0) {
      // Any other escape, kept whole so that "\\" never pairs with the next character.
      out.append(text.substr(i, 2));
      i += 2;
      continue;
    }
    if (IsHighSurrogate(unit) && IsLowSurrogate(EscapedUnit(text, i + 6))) {
      out.append(text.substr(i, 12));
      i += 12;
    } else if (IsHighSurrogate(unit) || IsLowSurrogate(unit)) {
      out += "\\ufffd";
      i += 6;
    } else {
      out.append(text.substr(i, 6));
      i += 6;
    }
  }
  return out;
}

std::string StripControlCharacters(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 && c != '\t' && c != '\n' && c != '\r') continue;
    out.push_back(c);
  }
  return out;
}

Result<DecodedJson> DecodeJsonValue(std::string_view bytes) {
  DecodedJson decoded{.original = bytes};
  if (!IsValidUtf8(bytes)) {
    decoded.repaired = RepairUtf8(bytes);
    decoded.replaced_invalid_utf8 = true;
  }
  bool surrogates_repaired = false;
  bool controls_stripped = false;
  while (true) {
    JsonCheck check = CheckJson(decoded.json());
    if (check.ok()) return decoded;
    std::string fixed;
    if (check.problem == JsonProblem::kLoneSurrogate && !surrogates_repaired) {
      surrogates_repaired = true;
      fixed = ReplaceLoneSurrogates(decoded.json());
    } else if (check.problem == JsonProblem::kControlCharacter && !controls_stripped) {
      controls_stripped = true;
      fixed = StripControlCharacters(decoded.json());
    }
    if (fixed.empty() || fixed == decoded.json()) {
      return Fail(MessageError(fmt::format("the value is not JSON: {} at byte {}",
                                           ProblemText(check.problem), check.offset)));
    }
    decoded.repaired = std::move(fixed);
  }
}

Result<std::string_view> DecodeJsonKey(std::string_view bytes) {
  if (!IsValidUtf8(bytes)) {
    return Fail(MessageError("the key is not valid UTF-8"));
  }
  JsonCheck check = CheckJson(bytes);
  if (!check.ok()) {
    return Fail(MessageError(fmt::format("the key is not JSON: {} at byte {}",
                                         ProblemText(check.problem), check.offset)));
  }
  return bytes;
}

void AppendInteger(std::string& out, int64_t value) {
  char digits[24];
  auto [end, error] = std::to_chars(digits, digits + sizeof(digits), value);
  (void)error;  // 24 characters hold any int64_t.
  out.append(digits, end);
}

std::string RecordId(int32_t partition, int64_t offset) {
  std::string id = "partition_";
  AppendInteger(id, partition);
  id += "_offset_";
  AppendInteger(id, offset);
  return id;
}

void AppendRecordJson(std::string& out, const RecordParts& parts) {
  out += R"({"topic":)";
  AppendJsonString(out, parts.topic);
  // std::to_chars rather than fmt: this runs once per message and fmt's format-string parsing
  // showed in profiles.
  out += R"(,"offset":)";
  AppendInteger(out, parts.offset);
  out += R"(,"partition":)";
  AppendInteger(out, parts.partition);
  out += R"(,"timestamp":)";
  AppendInteger(out, parts.timestamp_ms);
  out += R"(,"keys":)";
  out += parts.keys_json;
  out += R"(,"headers":{)";
  bool first = true;
  for (const auto& [name, value] : parts.headers) {
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(out, IsValidUtf8(name) ? std::string(name) : RepairUtf8(name));
    out.push_back(':');
    if (!value) {
      out += "null";
    } else if (IsValidUtf8(*value)) {
      AppendJsonString(out, *value);
    } else {
      AppendJsonString(out, RepairUtf8(*value));
    }
  }
  out += R"(},"value":)";
  out += parts.value_json;
  out += R"(,"schema":)";
  out += parts.schema_json;
  out.push_back('}');
}

}  // namespace bizon::kafka
