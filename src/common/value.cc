#include "bizon/value.h"

#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <string>

#include "common/json_scan.h"

namespace bizon {

double Value::AsDouble() const {
  if (is_integer()) return static_cast<double>(AsInteger());
  return std::get<double>(data_);
}

const Value* Value::Find(std::string_view key) const {
  if (!is_map()) return nullptr;
  for (const auto& [name, value] : AsMap()) {
    if (name == key) return &value;
  }
  return nullptr;
}

Value* Value::Find(std::string_view key) {
  return const_cast<Value*>(std::as_const(*this).Find(key));  // NOLINT: const overload reuse.
}

const Value* Value::FindPath(std::string_view dotted_path) const {
  const Value* node = this;
  while (node != nullptr && !dotted_path.empty()) {
    size_t dot = dotted_path.find('.');
    node = node->Find(dotted_path.substr(0, dot));
    dotted_path = dot == std::string_view::npos ? std::string_view() : dotted_path.substr(dot + 1);
  }
  return node;
}

Value& Value::Set(std::string_view key, Value value) {
  if (!is_map()) data_ = Map{};
  if (Value* existing = Find(key)) {
    SourceMark mark = existing->mark();
    *existing = std::move(value);
    if (existing->mark().line == 0) existing->set_mark(mark);
    return *existing;
  }
  AsMap().emplace_back(std::string(key), std::move(value));
  return AsMap().back().second;
}

Value& Value::GetOrCreateMap(std::string_view key) {
  Value* existing = Find(key);
  if (existing != nullptr && existing->is_map()) return *existing;
  return Set(key, EmptyMap());
}

bool Value::Erase(std::string_view key) {
  if (!is_map()) return false;
  Map& map = AsMap();
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first == key) {
      map.erase(it);
      return true;
    }
  }
  return false;
}

std::string Value::GetString(std::string_view key, std::string_view fallback) const {
  const Value* v = Find(key);
  if (v == nullptr || !v->is_string()) return std::string(fallback);
  return v->AsString();
}

int64_t Value::GetInteger(std::string_view key, int64_t fallback) const {
  const Value* v = Find(key);
  if (v == nullptr || !v->is_number()) return fallback;
  return v->is_integer() ? v->AsInteger() : static_cast<int64_t>(v->AsDouble());
}

double Value::GetDouble(std::string_view key, double fallback) const {
  const Value* v = Find(key);
  if (v == nullptr || !v->is_number()) return fallback;
  return v->AsDouble();
}

bool Value::GetBool(std::string_view key, bool fallback) const {
  const Value* v = Find(key);
  if (v == nullptr || !v->is_bool()) return fallback;
  return v->AsBool();
}

void AppendJsonString(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t run_start = 0;
  for (size_t i = 0; (i = json_scan::FindSpecial(text, i)) < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    out.append(text.substr(run_start, i - run_start));
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      default:
        out.append("\\u00");
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xf]);
    }
    run_start = i + 1;
  }
  out.append(text.substr(run_start));
  out.push_back('"');
}

void Value::AppendJson(std::string& out) const {
  switch (kind()) {
    case Kind::kNull:
      out.append("null");
      return;
    case Kind::kBool:
      out.append(AsBool() ? "true" : "false");
      return;
    case Kind::kInteger:
      out.append(std::to_string(AsInteger()));
      return;
    case Kind::kDouble: {
      double d = AsDouble();
      if (!std::isfinite(d)) {
        out.append("null");
        return;
      }
      char buffer[32];
      auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), d);
      std::string_view text(buffer, static_cast<size_t>(end - buffer));
      out.append(text);
      if (text.find_first_of(".eE") == std::string_view::npos) out.append(".0");
      return;
    }
    case Kind::kString:
      AppendJsonString(out, AsString());
      return;
    case Kind::kList: {
      out.push_back('[');
      bool first = true;
      for (const Value& item : AsList()) {
        if (!first) out.push_back(',');
        first = false;
        item.AppendJson(out);
      }
      out.push_back(']');
      return;
    }
    case Kind::kMap: {
      out.push_back('{');
      bool first = true;
      for (const auto& [key, item] : AsMap()) {
        if (!first) out.push_back(',');
        first = false;
        AppendJsonString(out, key);
        out.push_back(':');
        item.AppendJson(out);
      }
      out.push_back('}');
      return;
    }
  }
}

std::string Value::ToJson() const {
  std::string out;
  AppendJson(out);
  return out;
}

std::string Value::ToDisplayString() const {
  if (is_string()) return AsString();
  return ToJson();
}

namespace {

Value FromElement(simdjson::dom::element element) {
  switch (element.type()) {
    case simdjson::dom::element_type::OBJECT: {
      Value::Map map;
      simdjson::dom::object object = element.get_object().value_unsafe();
      for (auto field : object) {
        map.emplace_back(std::string(field.key), FromElement(field.value));
      }
      return Value(std::move(map));
    }
    case simdjson::dom::element_type::ARRAY: {
      Value::List list;
      simdjson::dom::array array = element.get_array().value_unsafe();
      for (auto item : array) list.push_back(FromElement(item));
      return Value(std::move(list));
    }
    case simdjson::dom::element_type::STRING:
      return Value(std::string(element.get_string().value_unsafe()));
    case simdjson::dom::element_type::INT64:
      return Value(element.get_int64().value_unsafe());
    case simdjson::dom::element_type::UINT64:
      return Value(static_cast<double>(element.get_uint64().value_unsafe()));
    case simdjson::dom::element_type::DOUBLE:
      return Value(element.get_double().value_unsafe());
    case simdjson::dom::element_type::BOOL:
      return Value(element.get_bool().value_unsafe());
    case simdjson::dom::element_type::NULL_VALUE:
      return Value();
  }
  return Value();
}

}  // namespace

Result<Value> Value::FromJson(std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element root;
  auto error = parser.parse(padded).get(root);
  if (error) {
    return Fail(
        InvalidArgumentError(std::string("invalid JSON: ") + simdjson::error_message(error)));
  }
  return FromElement(root);
}

std::string_view ToString(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kNull:
      return "null";
    case Value::Kind::kBool:
      return "boolean";
    case Value::Kind::kInteger:
      return "integer";
    case Value::Kind::kDouble:
      return "number";
    case Value::Kind::kString:
      return "string";
    case Value::Kind::kList:
      return "list";
    case Value::Kind::kMap:
      return "mapping";
  }
  return "unknown";
}

}  // namespace bizon
