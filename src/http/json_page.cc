#include "http/json_page.h"

#include <fmt/format.h>
#include <simdjson.h>

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

}  // namespace

std::string DottedPathToPointer(std::string_view path) {
  std::string pointer;
  for (const std::string& segment : Segments(path)) {
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

Status JsonPage::ForEachObject(std::string_view array_path, const std::vector<std::string>& fields,
                               const std::function<Status(const JsonObjectView&)>& visit,
                               bool missing_is_empty) const {
  std::vector<std::vector<std::string>> field_segments;
  field_segments.reserve(fields.size());
  for (const std::string& field : fields) field_segments.push_back(Segments(field));

  BIZON_RETURN_IF_ERROR(Validate());
  ondemand::document document;
  simdjson::padded_string_view view(body_.data(), length_, body_.size());
  if (auto error = Parser().iterate(view).get(document)) {
    return InvalidJson(simdjson::error_message(error));
  }
  std::string pointer = DottedPathToPointer(array_path);
  std::string label =
      pointer.empty() ? std::string("the top level") : fmt::format("'{}'", array_path);
  ondemand::array array;
  if (pointer.empty()) {
    ondemand::json_type type;
    if (auto error = document.type().get(type)) return InvalidJson(simdjson::error_message(error));
    if (type != ondemand::json_type::array) {
      return Status(StatusCode::kFailedPrecondition,
                    fmt::format("the response of {} has no array at {}", origin_, label),
                    FailureClass::kSource);
    }
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
    if (absent) {
      if (missing_is_empty) return Status::Ok();
      return Status(StatusCode::kFailedPrecondition,
                    fmt::format("the response of {} has no array at {}", origin_, label),
                    FailureClass::kSource);
    }
    error = value.get_array().get(array);
    if (error == simdjson::INCORRECT_TYPE) {
      return Status(StatusCode::kFailedPrecondition,
                    fmt::format("the response of {} has no array at {}", origin_, label),
                    FailureClass::kSource);
    }
    if (error) return InvalidJson(simdjson::error_message(error));
  }

  JsonObjectView object_view;
  object_view.fields.resize(fields.size());
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
    for (size_t i = 0; i < field_segments.size(); ++i) {
      if (auto error = ExtractField(object, field_segments[i], object_view.fields[i])) {
        return InvalidJson(simdjson::error_message(error));
      }
    }
    std::string_view raw;
    if (auto error = object.raw_json().get(raw)) return InvalidJson(simdjson::error_message(error));
    object_view.index = index;
    object_view.json = TrimRight(raw);
    BIZON_RETURN_IF_ERROR(visit(object_view));
    ++index;
  }
  return Status::Ok();
}

}  // namespace bizon
