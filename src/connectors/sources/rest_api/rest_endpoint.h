// RestEndpoint: one paginated JSON endpoint, read page by page. The machinery of the rest_api
// source, also used by sources whose API fits it (pokeapi).
//
// Each Fetch() sends one request, slices the records out of the page as raw JSON (JsonPage, no
// DOM), and works out the pagination for the next page:
//
// | pagination   | next page                                   | last page when                  |
// |--------------|---------------------------------------------|---------------------------------|
// | none         | -                                           | always                          |
// | offset       | offset += records received                  | fewer records than limit, an    |
// | page_number  | page += 1                                   |   empty page, total / has_more  |
//                                                                  |   / maximum_* say so |
// | cursor       | cursor = value at cursor_path               | cursor null/empty, or has_more  |
// | next_url     | URL at next_url_path                        | it is null/empty                |
// | link_header  | the rel="next" target of the Link header    | there is none                   |
//
// Pagination values are small JSON maps ({"offset": 40}, {"cursor": "..."}, {"next": "url"}) so
// they survive a resume through the backend.
//
// Thread-compatible: one caller at a time (the producer).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/source.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "common/python_hooks.h"
#include "http/http_session.h"
#include "http/json_page.h"

namespace bizon {

// The specs below are filled by the rest_api readers (rest_api_spec.h) from the option
// declarations, which hold every default; a spec built in code (pokeapi) names what it uses.

struct PaginationSpec {
  enum class Type { kNone, kOffset, kPageNumber, kCursor, kNextUrl, kLinkHeader };
  Type type = Type::kNone;
  // offset
  std::string offset_param;
  std::string limit_param;
  int64_t limit = 0;
  int64_t start_offset = 0;
  // page_number
  std::string page_param;
  int64_t start_page = 0;
  std::string page_size_param;
  /// page_number: records per page, sent as page_size_param; a shorter page is the last.
  std::optional<int64_t> page_size;
  /// page_number: the last page to ask for.
  std::optional<int64_t> maximum_page;
  /// offset: no page is asked for at or past this offset.
  std::optional<int64_t> maximum_offset;
  // cursor
  std::string cursor_param;
  std::string cursor_path;
  /// Where the offset, page or cursor goes: the query string, or (for POST) the JSON body.
  bool in_body = false;
  // next_url
  std::string next_url_path;
  // Stop conditions shared by offset, page_number and cursor.
  std::string has_more_path;
  /// offset: the total record count; page_number: the total page count.
  std::string total_path;
  /// offset and page_number: an empty page is not the last (`stop_after_empty_page: false`), so
  /// total_path, has_more_path or maximum_* must end the paging.
  bool past_empty_pages = false;
};

struct IncrementalSpec {
  /// Query parameter receiving the lower bound of the window.
  std::string param;
  /// Optional query parameter receiving its upper bound (the run's start).
  std::string end_param;
  /// iso8601 (or empty), unix, unix_ms, date, or a strftime format.
  std::string format;
  /// Record field whose largest value becomes the next run's lower bound (its state).
  std::string cursor_field;

  // The resources form only (rest_resources.h).
  /// The lower bound of a first run.
  std::optional<Value> initial_value;
  /// The excluded upper bound: a closed backfill range, which leaves the stored state alone.
  std::optional<Value> end_value;
  /// How far back each run starts before the stored cursor: seconds for timestamps, days for
  /// dates, units for numbers.
  double lag = 0;
  enum class RowOrder { kNone, kAscending, kDescending };
  /// With an order, paging stops at the first record past the range.
  RowOrder row_order = RowOrder::kNone;
  enum class MissingCursor { kRaise, kInclude, kExclude };
  MissingCursor on_cursor_value_missing = MissingCursor::kRaise;
};

/// What to do with a response that matches: by status code, by a substring of the body, or both.
/// A Python action leaves the decision to its hook (`on_response`), called with the response.
struct ResponseAction {
  std::optional<int> status_code;
  std::string content;
  enum class Kind { kIgnore, kRetry, kFail, kPython };
  Kind action = Kind::kFail;
  /// kPython: the hook's code, and the hook once compiled (MakeResourcesSource).
  std::string python;
  PythonHook hook;

  bool Matches(int status, std::string_view body) const;
};

struct EndpointSpec {
  std::string name;
  std::string url;
  /// GET or POST; empty: HttpRequest's own (GET).
  std::string method;
  QueryParams params;
  /// JSON body of a POST; the cursor is added to it when cursor_in_body.
  std::optional<Value> body;
  HttpHeaders headers;
  /// Dotted path to the records array; "" when the page itself is the array.
  std::string record_selector;
  /// Dotted path to each record's id; "" gives records an empty id.
  std::string record_id;
  PaginationSpec pagination;
  std::optional<IncrementalSpec> incremental;
};

/// A record id as text: strings as they are, integers in decimal, anything else as JSON.
std::string RecordIdText(const Value& value);

/// Formats a UTC timestamp for an incremental query parameter.
std::string FormatWindowBound(int64_t micros, std::string_view format);

/// Where the page asked for sits, as PageRequest() worked it out.
struct PagePosition {
  int64_t offset = 0;
  int64_t page_number = 0;
};

/// The request for the page after `pagination` ({} for the first) of `spec`, with `extra` query
/// parameters after the endpoint's own; `url` and `body`, when given, replace the endpoint's
/// (a path with its placeholders resolved). Sets `position`.
HttpRequest PageRequest(const EndpointSpec& spec, const Value& pagination, const QueryParams& extra,
                        PagePosition& position, const std::string* url = nullptr,
                        const Value* body = nullptr);

/// The pagination of the page after `page`, which held `count` records; an empty map after the
/// last page. `response_url` resolves relative next URLs; `link` is the Link header, if any.
Result<Value> NextPagination(const PaginationSpec& paging, const JsonPage& page,
                             const PagePosition& position, int64_t count,
                             const std::string& response_url,
                             const std::optional<std::string>& link);

class RestEndpoint {
 public:
  RestEndpoint(EndpointSpec spec, std::shared_ptr<HttpSession> session);

  /// Fetches the page after `pagination` ({} for the first), with `extra` query parameters added
  /// to the endpoint's own (incremental bounds).
  Result<SourceIteration> Fetch(const Value& pagination, const QueryParams& extra = {});

  /// Incremental fetch: the window's bounds become query parameters; `next_state` carries the
  /// largest cursor_field value seen so far.
  Result<SourceIteration> FetchAfter(const IncrementalState& state, const Value& pagination);

  /// Sends the first page's request and reads `path` from it (a total count).
  Result<std::optional<Value>> ReadFirstPage(std::string_view path);

  const EndpointSpec& spec() const { return spec_; }

 private:
  EndpointSpec spec_;
  std::shared_ptr<HttpSession> session_;
  std::optional<Value> max_cursor_;  // Largest incremental cursor_field value of this run.
};

}  // namespace bizon
