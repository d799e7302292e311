// JsonPage: a JSON response body read on demand (simdjson), without building a DOM.
//
// A source asks the page for a few small values (a cursor, a count, a next URL) with Find(), and
// walks the records array with ForEachObject(), which hands each record over as the exact bytes it
// had in the body (copied into a RecordBatch as is) plus the handful of fields the source asked
// for (an id, a timestamp). Nothing else of the record is parsed.
//
// Paths are dotted: "results", "paging.next.after", "items.0.id"; "" (or "$") is the root.
// Record selectors may also be JSONPath (a subset: `$`, `.name`, `['name']`, `[n]`, `[*]`, `.*`):
// "$.data[*].items" visits the objects of every `items` array under `data`.
// Thread-compatible: a JsonPage is read by one thread at a time.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

/// One object of an array, as ForEachObject() sees it.
struct JsonObjectView {
  /// Position in the array.
  size_t index = 0;
  /// The object's bytes, as they appear in the page.
  std::string_view json;
  /// The requested fields, in the order asked; nullopt for an absent field, Value() for null.
  std::vector<std::optional<Value>> fields;
};

class JsonPage {
 public:
  /// `origin` names the response in error messages ("GET https://...").
  JsonPage(std::string body, std::string origin);

  /// The value at `path`, converted to a Value (objects and arrays in full); nullopt when some
  /// segment is absent. Fails when the page is not valid JSON on the way there.
  Result<std::optional<Value>> Find(std::string_view path) const;

  /// Calls `visit` for each object of the array at `array_path`, with `fields` (dotted paths
  /// relative to the object) extracted. A null or absent array visits nothing when
  /// `missing_is_empty`, else a missing one fails. A non-object element fails. A JSONPath with a
  /// wildcard is read as ForEachSelected() reads it.
  Status ForEachObject(std::string_view array_path, const std::vector<std::string>& fields,
                       const std::function<Status(const JsonObjectView&)>& visit,
                       bool missing_is_empty = false) const;

  /// Calls `visit` for each record `selector` (JSONPath, or a dotted path) reaches: an array
  /// reached gives its objects, an object reached is one record, null or absent gives nothing.
  /// `index` counts the records visited. A non-object element of a reached array fails.
  Status ForEachSelected(std::string_view selector, const std::vector<std::string>& fields,
                         const std::function<Status(const JsonObjectView&)>& visit) const;

  /// The records' place when none is named: "$" when the page is an array, else the JSONPath of
  /// the largest array among the top-level keys (the first of equal ones), else "$" (the object
  /// is the one record). `array_length` receives the chosen array's length.
  Result<std::string> DetectRecordSelector(size_t* array_length = nullptr) const;

  std::string_view text() const { return std::string_view(body_.data(), length_); }
  const std::string& origin() const { return origin_; }

 private:
  Status InvalidJson(std::string_view detail) const;
  /// Checks the whole page once: the on-demand reader skips what it does not read without
  /// checking it, so a record's bytes could otherwise be handed on as a broken object.
  Status Validate() const;

  std::string body_;  // The text followed by the parser's padding.
  size_t length_ = 0;
  std::string origin_;
  mutable std::optional<Status> validity_;  // Validate()'s answer, once known.
};

/// Converts a dotted path to a JSON pointer: "a.b.0" -> "/a/b/0", "" -> "".
std::string DottedPathToPointer(std::string_view path);

/// One step of a parsed selector.
struct JsonPathStep {
  enum class Kind { kName, kIndex, kWildcard };
  Kind kind = Kind::kName;
  std::string name;  // kName; an index written as a dotted segment stays a name ("items.0").
  size_t index = 0;  // kIndex
};

/// Parses a dotted path or a JSONPath of the subset above ("" and "$" are the root: no step).
Result<std::vector<JsonPathStep>> ParseJsonPath(std::string_view path);

/// A JSONPath naming the top-level key `key`: "$.data", or "$['odd key']".
std::string JsonPathOfKey(std::string_view key);

}  // namespace bizon
