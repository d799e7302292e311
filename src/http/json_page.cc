#include "http/json_page.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

#include "http/http_session.h"

namespace bizon {
namespace {

namespace ondemand = simdjson::ondemand;

ondemand::parser& Parser() {
  // One parser per thread: it keeps its buffers between pages.
  thread_local ondemand::parser parser;
  return parser;
}

std::string_view TrimRight(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::vector<std::string> Segments(std::string_view path) {
  if (path.starts_with("$")) path.remove_prefix(1);
  if (path.starts_with(".")) path.remove_prefix(1);
  std::vector<std::string> segments;
  if (path.empty()) return segments;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    segments.emplace_back(
        path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return segments;
}

std::optional<size_t> ArrayIndex(std::string_view segment) {
  size_t index = 0;
  auto [end, error] = std::from_chars(segment.data(), segment.data() + segment.size(), index);
  if (error != std::errc() || end != segment.data() + segment.size() || segment.empty()) {
    return std::nullopt;
  }
  return index;
}

// The pointers here are built from dotted paths, so they are well formed: on-demand's "invalid
// pointer" means the path goes on below a scalar ("has_more.deeper" with has_more false).
bool IsPointerThroughScalar(simdjson::error_code error) {
  return error == simdjson::INVALID_JSON_POINTER;
}

bool IsAbsence(simdjson::error_code error) {
  return error == simdjson::NO_SUCH_FIELD || error == simdjson::INDEX_OUT_OF_BOUNDS ||
         error == simdjson::INCORRECT_TYPE || IsPointerThroughScalar(error);
}

simdjson::error_code ToValue(ondemand::value& value, Value& out) {
  ondemand::json_type type;
  if (auto error = value.type().get(type)) return error;
  switch (type) {
    case ondemand::json_type::object: {
      ondemand::object object;
      std::string_view raw;
      if (auto error = value.get_object().get(object)) return error;
      if (auto error = object.raw_json().get(raw)) return error;
      auto parsed = Value::FromJson(TrimRight(raw));
      if (!parsed) return simdjson::TAPE_ERROR;
      out = std::move(*parsed);
      return simdjson::SUCCESS;
    }
    case ondemand::json_type::array: {
      ondemand::array array;
      std::string_view raw;
      if (auto error = value.get_array().get(array)) return error;
      if (auto error = array.raw_json().get(raw)) return error;
      auto parsed = Value::FromJson(TrimRight(raw));
      if (!parsed) return simdjson::TAPE_ERROR;
      out = std::move(*parsed);
      return simdjson::SUCCESS;
    }
    case ondemand::json_type::string: {
      std::string_view text;
      if (auto error = value.get_string().get(text)) return error;
      out = Value(std::string(text));
      return simdjson::SUCCESS;
    }
    case ondemand::json_type::number: {
      ondemand::number_type number_type;
      if (auto error = value.get_number_type().get(number_type)) return error;
      if (number_type == ondemand::number_type::signed_integer) {
        int64_t number = 0;
        if (auto error = value.get_int64().get(number)) return error;
        out = Value(number);
      } else if (number_type == ondemand::number_type::unsigned_integer) {
        uint64_t number = 0;
        if (auto error = value.get_uint64().get(number)) return error;
        out = number <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                  ? Value(static_cast<int64_t>(number))
                  : Value(static_cast<double>(number));
      } else {
        double number = 0;
        if (auto error = value.get_double().get(number)) return error;
        out = Value(number);
      }
      return simdjson::SUCCESS;
    }
    case ondemand::json_type::boolean: {
      bool flag = false;
      if (auto error = value.get_bool().get(flag)) return error;
      out = Value(flag);
      return simdjson::SUCCESS;
    }
    case ondemand::json_type::null: {
      bool is_null = false;
      if (auto error = value.is_null().get(is_null)) return error;
      out = Value();
      return simdjson::SUCCESS;
    }
  }
  return simdjson::INCORRECT_TYPE;
}

// Reads the field at `segments` below `object`; leaves `out` empty when some segment is absent.
simdjson::error_code ExtractField(ondemand::object& object,
                                  const std::vector<std::string>& segments,
                                  std::optional<Value>& out) {
  out.reset();
  if (segments.empty()) return simdjson::SUCCESS;
  ondemand::value value;
  auto error = object.find_field_unordered(segments[0]).get(value);
  if (IsAbsence(error)) return simdjson::SUCCESS;
  if (error) return error;
  for (size_t i = 1; i < segments.size(); ++i) {
    ondemand::json_type type;
    if (auto type_error = value.type().get(type)) return type_error;
    if (type == ondemand::json_type::object) {
      ondemand::object child;
      if (auto child_error = value.get_object().get(child)) return child_error;
      error = child.find_field_unordered(segments[i]).get(value);
      if (IsAbsence(error)) return simdjson::SUCCESS;
      if (error) return error;
    } else if (type == ondemand::json_type::array && ArrayIndex(segments[i])) {
      ondemand::array array;
      if (auto array_error = value.get_array().get(array)) return array_error;
      size_t wanted = *ArrayIndex(segments[i]);
      size_t position = 0;
      bool found = false;
      for (auto element : array) {
        if (position++ != wanted) continue;
        if (auto element_error = element.get(value)) return element_error;
        found = true;
        break;
      }
      if (!found) return simdjson::SUCCESS;
    } else {
      return simdjson::SUCCESS;
    }
  }
  Value converted;
  if (auto convert_error = ToValue(value, converted)) return convert_error;
  out = std::move(converted);
  return simdjson::SUCCESS;
}

bool IsSimpleName(std::string_view key) {
  if (key.empty() || std::isdigit(static_cast<unsigned char>(key.front())) != 0) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  });
}

void AppendPointerSegment(std::string& pointer, std::string_view segment) {
  pointer.push_back('/');
  for (char c : segment) {
    if (c == '~') {
      pointer += "~0";
    } else if (c == '/') {
      pointer += "~1";
    } else {
      pointer.push_back(c);
    }
  }
}

bool HasWildcard(const std::vector<JsonPathStep>& steps) {
  return std::any_of(steps.begin(), steps.end(), [](const JsonPathStep& step) {
    return step.kind == JsonPathStep::Kind::kWildcard;
  });
}

std::string StepsToPointer(const std::vector<JsonPathStep>& steps) {
  std::string pointer;
  for (const JsonPathStep& step : steps) {
    AppendPointerSegment(
        pointer, step.kind == JsonPathStep::Kind::kIndex ? std::to_string(step.index) : step.name);
  }
  return pointer;
}

// Walks a selector with wildcards over an on-demand value, handing each object it selects to
// `emit_object`. Forward only, as on-demand reading is: a wildcard visits each child in order.
class SelectorWalk {
 public:
  using EmitObject = std::function<Status(ondemand::object&)>;
  using Failure = std::function<Status(std::string_view detail, bool invalid_json)>;

  SelectorWalk(const std::vector<JsonPathStep>& steps, std::string_view label, EmitObject emit,
               Failure failure)
      : steps_(steps), label_(label), emit_(std::move(emit)), failure_(std::move(failure)) {}

  Status Walk(ondemand::value value, size_t step_index) {
    ondemand::json_type type;
    if (auto error = value.type().get(type)) return Invalid(error);
    if (step_index == steps_.size()) return Emit(value, type);
    const JsonPathStep& step = steps_[step_index];
    if (type == ondemand::json_type::object) {
      ondemand::object object;
      if (auto error = value.get_object().get(object)) return Invalid(error);
      if (step.kind == JsonPathStep::Kind::kWildcard) {
        for (auto field : object) {
          ondemand::value child;
          if (auto error = field.value().get(child)) return Invalid(error);
          BIZON_RETURN_IF_ERROR(Walk(child, step_index + 1));
        }
        return Status::Ok();
      }
      std::string key =
          step.kind == JsonPathStep::Kind::kIndex ? std::to_string(step.index) : step.name;
      ondemand::value child;
      auto error = object.find_field_unordered(key).get(child);
      if (IsAbsence(error)) return Status::Ok();
      if (error) return Invalid(error);
      return Walk(child, step_index + 1);
    }
    if (type != ondemand::json_type::array) return Status::Ok();  // Nothing below a scalar.
    ondemand::array array;
    if (auto error = value.get_array().get(array)) return Invalid(error);
    std::optional<size_t> wanted;
    if (step.kind == JsonPathStep::Kind::kIndex) wanted = step.index;
    if (step.kind == JsonPathStep::Kind::kName) {
      wanted = ArrayIndex(step.name);
      if (!wanted) return Status::Ok();
    }
    size_t position = 0;
    for (auto element : array) {
      ondemand::value child;
      if (auto error = element.get(child)) return Invalid(error);
      if (!wanted || *wanted == position) BIZON_RETURN_IF_ERROR(Walk(child, step_index + 1));
      if (wanted && *wanted == position) break;
      ++position;
    }
    return Status::Ok();
  }

 private:
  Status Emit(ondemand::value& value, ondemand::json_type type) {
    if (type == ondemand::json_type::null) return Status::Ok();
    if (type == ondemand::json_type::object) {
      ondemand::object object;
      if (auto error = value.get_object().get(object)) return Invalid(error);
      return emit_(object);
    }
    if (type != ondemand::json_type::array) {
      return failure_(fmt::format("{} selects a {}, not records", label_, TypeName(type)), false);
    }
    ondemand::array array;
    if (auto error = value.get_array().get(array)) return Invalid(error);
    size_t position = 0;
    for (auto element : array) {
      ondemand::object object;
      if (auto error = element.get_object().get(object)) {
        if (error != simdjson::INCORRECT_TYPE) return Invalid(error);
        return failure_(fmt::format("element {} of {} is not a JSON object", position, label_),
                        false);
      }
      BIZON_RETURN_IF_ERROR(emit_(object));
      ++position;
    }
    return Status::Ok();
  }

  static std::string_view TypeName(ondemand::json_type type) {
    switch (type) {
      case ondemand::json_type::string:
        return "string";
      case ondemand::json_type::number:
        return "number";
      case ondemand::json_type::boolean:
        return "boolean";
      default:
        return "value";
    }
  }

  Status Invalid(simdjson::error_code error) {
    return failure_(simdjson::error_message(error), true);
  }

  const std::vector<JsonPathStep>& steps_;
  std::string label_;
  EmitObject emit_;
  Failure failure_;
};

}  // namespace

Result<std::vector<JsonPathStep>> ParseJsonPath(std::string_view path) {
  std::string_view rest = path;
  if (rest.starts_with("$")) rest.remove_prefix(1);
  std::vector<JsonPathStep> steps;
  auto invalid = [&](std::string_view why) {
    return Fail(InvalidArgumentError(fmt::format("invalid record path '{}': {}", path, why)));
  };
  auto name_step = [](std::string_view name) {
    if (name == "*") return JsonPathStep{.kind = JsonPathStep::Kind::kWildcard};
    return JsonPathStep{.kind = JsonPathStep::Kind::kName, .name = std::string(name)};
  };
  bool first = true;
  while (!rest.empty()) {
    if (rest.front() == '[') {
      size_t close = std::string_view::npos;
      std::string_view inner;
      if (rest.size() > 1 && (rest[1] == '\'' || rest[1] == '"')) {
        size_t quote_end = rest.find(rest[1], 2);
        if (quote_end == std::string_view::npos || quote_end + 1 >= rest.size() ||
            rest[quote_end + 1] != ']') {
          return invalid("unterminated quoted name");
        }
        steps.push_back({.kind = JsonPathStep::Kind::kName,
                         .name = std::string(rest.substr(2, quote_end - 2))});
        rest.remove_prefix(quote_end + 2);
        first = false;
        continue;
      }
      close = rest.find(']');
      if (close == std::string_view::npos) return invalid("a '[' without ']'");
      inner = rest.substr(1, close - 1);
      if (inner == "*") {
        steps.push_back({.kind = JsonPathStep::Kind::kWildcard});
      } else if (std::optional<size_t> index = ArrayIndex(inner)) {
        steps.push_back({.kind = JsonPathStep::Kind::kIndex, .index = *index});
      } else {
        return invalid("only [n], [*] and ['name'] are supported between brackets");
      }
      rest.remove_prefix(close + 1);
      first = false;
      continue;
    }
    if (rest.front() == '.') {
      if (rest.starts_with("..")) return invalid("recursive descent '..' is not supported");
      rest.remove_prefix(1);
    } else if (!first) {
      return invalid("expected '.' or '['");
    }
    size_t end = rest.find_first_of(".[");
    std::string_view name = rest.substr(0, end);
    if (name.empty()) return invalid("an empty name");
    steps.push_back(name_step(name));
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
    first = false;
  }
  return steps;
}

std::string JsonPathOfKey(std::string_view key) {
  if (IsSimpleName(key)) return fmt::format("$.{}", key);
  char quote = key.find('\'') == std::string_view::npos ? '\'' : '"';
  return fmt::format("$[{}{}{}]", quote, key, quote);
}

std::string DottedPathToPointer(std::string_view path) {
  std::string pointer;
  for (const std::string& segment : Segments(path)) AppendPointerSegment(pointer, segment);
  return pointer;
}
JsonPage::JsonPage(std::string body, std::string origin)
    : body_(std::move(body)), length_(body_.size()), origin_(std::move(origin)) {
  body_.append(simdjson::SIMDJSON_PADDING, ' ');
}

Status JsonPage::InvalidJson(std::string_view detail) const {
  return Status(StatusCode::kUnavailable,
                fmt::format("invalid JSON in the response of {}: {}; body: {}", origin_, detail,
                            BodyExcerpt(text(), 200)),
                FailureClass::kSource);
}

Status JsonPage::Validate() const {
  if (!validity_) {
    // One DOM parser per thread, like the on-demand one: it keeps its buffers between pages.
    thread_local simdjson::dom::parser validator;
    simdjson::dom::element root;
    auto error = validator.parse(body_.data(), length_, /*realloc_if_needed=*/false).get(root);
    validity_ = error ? InvalidJson(simdjson::error_message(error)) : Status::Ok();
  }
  return *validity_;
}

Result<std::optional<Value>> JsonPage::Find(std::string_view path) const {
  std::string pointer = DottedPathToPointer(path);
  if (pointer.empty()) {
    auto parsed = Value::FromJson(text());
    if (!parsed) return Fail(InvalidJson(parsed.error().message()));
    return std::optional<Value>(std::move(*parsed));
  }
  BIZON_RETURN_IF_ERROR(Validate());
  ondemand::document document;
  simdjson::padded_string_view view(body_.data(), length_, body_.size());
  if (auto error = Parser().iterate(view).get(document)) {
    return Fail(InvalidJson(simdjson::error_message(error)));
  }
  ondemand::value value;
  auto error = document.at_pointer(pointer).get(value);
  if (IsAbsence(error)) return std::optional<Value>();
  if (error) return Fail(InvalidJson(simdjson::error_message(error)));
  Value out;
  if (auto convert_error = ToValue(value, out)) {
    return Fail(InvalidJson(simdjson::error_message(convert_error)));
  }
  return std::optional<Value>(std::move(out));
}

namespace {

// Hands each object to `visit` with the requested fields extracted, counting them.
class ObjectVisits {
 public:
  ObjectVisits(const std::vector<std::string>& fields,
               const std::function<Status(const JsonObjectView&)>& visit)
      : visit_(visit) {
    segments_.reserve(fields.size());
    for (const std::string& field : fields) segments_.push_back(Segments(field));
    view_.fields.resize(fields.size());
  }

  /// A simdjson error, or the visitor's status in `status`.
  simdjson::error_code Visit(ondemand::object& object, Status& status) {
    for (size_t i = 0; i < segments_.size(); ++i) {
      if (auto error = ExtractField(object, segments_[i], view_.fields[i])) return error;
    }
    std::string_view raw;
    if (auto error = object.raw_json().get(raw)) return error;
    view_.index = index_++;
    view_.json = TrimRight(raw);
    status = visit_(view_);
    return simdjson::SUCCESS;
  }

 private:
  std::vector<std::vector<std::string>> segments_;
  const std::function<Status(const JsonObjectView&)>& visit_;
  JsonObjectView view_;
  size_t index_ = 0;
};

}  // namespace

Status JsonPage::ForEachObject(std::string_view array_path, const std::vector<std::string>& fields,
                               const std::function<Status(const JsonObjectView&)>& visit,
                               bool missing_is_empty) const {
  std::string pointer;
  if (array_path.find_first_of("[*") != std::string_view::npos) {
    BIZON_ASSIGN_OR_RETURN(std::vector<JsonPathStep> steps, ParseJsonPath(array_path));
    if (HasWildcard(steps)) return ForEachSelected(array_path, fields, visit);
    pointer = StepsToPointer(steps);
  } else {
    pointer = DottedPathToPointer(array_path);
  }
  BIZON_RETURN_IF_ERROR(Validate());
  ondemand::document document;
  simdjson::padded_string_view view(body_.data(), length_, body_.size());
  if (auto error = Parser().iterate(view).get(document)) {
    return InvalidJson(simdjson::error_message(error));
  }
  std::string label =
      pointer.empty() ? std::string("the top level") : fmt::format("'{}'", array_path);
  auto no_array = [&] {
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("the response of {} has no array at {}", origin_, label),
                  FailureClass::kSource);
  };
  ondemand::array array;
  if (pointer.empty()) {
    ondemand::json_type type;
    if (auto error = document.type().get(type)) return InvalidJson(simdjson::error_message(error));
    if (type != ondemand::json_type::array) return no_array();
    if (auto error = document.get_array().get(array)) {
      return InvalidJson(simdjson::error_message(error));
    }
  } else {
    ondemand::value value;
    auto error = document.at_pointer(pointer).get(value);
    bool absent = error == simdjson::NO_SUCH_FIELD || error == simdjson::INDEX_OUT_OF_BOUNDS ||
                  IsPointerThroughScalar(error);
    if (!absent && error) return InvalidJson(simdjson::error_message(error));
    if (!absent) {
      bool is_null = false;
      if (auto null_error = value.is_null().get(is_null)) {
        return InvalidJson(simdjson::error_message(null_error));
      }
      absent = is_null;
    }
    if (absent) return missing_is_empty ? Status::Ok() : no_array();
    error = value.get_array().get(array);
    if (error == simdjson::INCORRECT_TYPE) return no_array();
    if (error) return InvalidJson(simdjson::error_message(error));
  }

  ObjectVisits visits(fields, visit);
  size_t index = 0;
  for (auto element_result : array) {
    ondemand::value element;
    if (auto error = element_result.get(element))
      return InvalidJson(simdjson::error_message(error));
    ondemand::object object;
    if (auto error = element.get_object().get(object)) {
      if (error == simdjson::INCORRECT_TYPE) {
        return Status(StatusCode::kFailedPrecondition,
                      fmt::format("element {} of {} in the response of {} is not a JSON object",
                                  index, label, origin_),
                      FailureClass::kSource);
      }
      return InvalidJson(simdjson::error_message(error));
    }
    Status visited;
    if (auto error = visits.Visit(object, visited))
      return InvalidJson(simdjson::error_message(error));
    BIZON_RETURN_IF_ERROR(visited);
    ++index;
  }
  return Status::Ok();
}

Status JsonPage::ForEachSelected(std::string_view selector, const std::vector<std::string>& fields,
                                 const std::function<Status(const JsonObjectView&)>& visit) const {
  BIZON_ASSIGN_OR_RETURN(std::vector<JsonPathStep> steps, ParseJsonPath(selector));
  BIZON_RETURN_IF_ERROR(Validate());
  ondemand::document document;
  simdjson::padded_string_view view(body_.data(), length_, body_.size());
  if (auto error = Parser().iterate(view).get(document)) {
    return InvalidJson(simdjson::error_message(error));
  }
  ondemand::value root;
  if (auto error = document.get_value().get(root)) {
    return InvalidJson(simdjson::error_message(error));
  }
  ObjectVisits visits(fields, visit);
  std::string label = steps.empty() ? std::string("the top level") : fmt::format("'{}'", selector);
  SelectorWalk walk(
      steps, label,
      [&](ondemand::object& object) -> Status {
        Status visited;
        if (auto error = visits.Visit(object, visited)) {
          return InvalidJson(simdjson::error_message(error));
        }
        return visited;
      },
      [&](std::string_view detail, bool invalid_json) -> Status {
        if (invalid_json) return InvalidJson(detail);
        return Status(StatusCode::kFailedPrecondition,
                      fmt::format("in the response of {}: {}", origin_, detail),
                      FailureClass::kSource);
      });
  return walk.Walk(root, 0);
}

Result<std::string> JsonPage::DetectRecordSelector(size_t* array_length) const {
  BIZON_RETURN_IF_ERROR(Validate());
  ondemand::document document;
  simdjson::padded_string_view view(body_.data(), length_, body_.size());
  simdjson::error_code error = Parser().iterate(view).get(document);
  ondemand::json_type type = ondemand::json_type::null;
  if (!error) error = document.type().get(type);
  size_t count = 0;
  // The page is the list.
  if (!error && type == ondemand::json_type::array) {
    ondemand::array array;
    error = document.get_array().get(array);
    if (!error) error = array.count_elements().get(count);
    if (!error) {
      if (array_length != nullptr) *array_length = count;
      return std::string("$");
    }
  }
  if (error) return Fail(InvalidJson(simdjson::error_message(error)));
  if (type != ondemand::json_type::object) {
    return Fail(Status(StatusCode::kFailedPrecondition,
                       fmt::format("the response of {} is neither an object nor an array", origin_),
                       FailureClass::kSource));
  }
  // Else its largest top-level list, else the object itself.
  ondemand::object object;
  error = document.get_object().get(object);
  if (error) return Fail(InvalidJson(simdjson::error_message(error)));
  std::optional<std::string> best;
  size_t best_count = 0;
  for (auto field : object) {
    std::string_view key;
    ondemand::value value;
    ondemand::array array;
    ondemand::json_type field_type = ondemand::json_type::null;
    error = field.unescaped_key().get(key);
    if (error) return Fail(InvalidJson(simdjson::error_message(error)));
    std::string key_text(key);  // The key's bytes live in the parser's string buffer.
    error = field.value().get(value);
    if (!error) error = value.type().get(field_type);
    if (!error && field_type == ondemand::json_type::array) {
      error = value.get_array().get(array);
      if (!error) error = array.count_elements().get(count);
      if (!error && (!best || count > best_count)) {
        best = std::move(key_text);
        best_count = count;
      }
    }
    if (error) return Fail(InvalidJson(simdjson::error_message(error)));
  }
  if (array_length != nullptr) *array_length = best ? best_count : 1;
  return best ? JsonPathOfKey(*best) : std::string("$");
}

}  // namespace bizon
