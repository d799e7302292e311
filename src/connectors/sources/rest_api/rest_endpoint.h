// RestEndpoint: one paginated JSON endpoint, read page by page. The machinery of the rest_api
// source, also used by sources whose API fits it (pokeapi).
//
// Each Fetch() sends one request, slices the records out of the page as raw JSON (JsonPage, no
// DOM), and works out the pagination for the next page:
//
// | pagination   | next page                                   | last page when                  |
// |--------------|---------------------------------------------|---------------------------------|
// | none         | -                                           | always                          |
// | offset       | offset += limit                             | fewer records than limit, or    |
// | page_number  | page += 1                                   |   total / has_more say so       |
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
#include <vector>

#include "bizon/source.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "http/http_session.h"
#include "http/json_page.h"

namespace bizon {

struct PaginationSpec {
  enum class Type { kNone, kOffset, kPageNumber, kCursor, kNextUrl, kLinkHeader };
  Type type = Type::kNone;
  // offset
  std::string offset_param = "offset";
  std::string limit_param = "limit";
  int64_t limit = 100;
  int64_t start_offset = 0;
  // page_number
  std::string page_param = "page";
  int64_t start_page = 1;
  std::string page_size_param;
  int64_t page_size = 0;
  // cursor
  std::string cursor_param = "cursor";
  std::string cursor_path = "next_cursor";
  /// Where the cursor goes: the query string, or (for POST) the JSON body.
  bool cursor_in_body = false;
  // next_url
  std::string next_url_path = "next";
  // Stop conditions shared by offset, page_number and cursor.
  std::string has_more_path;
  std::string total_path;
};

struct IncrementalSpec {
  /// Query parameter receiving the lower bound of the window.
  std::string param;
  /// Optional query parameter receiving its upper bound (the run's start).
  std::string end_param;
  /// iso8601 (default), unix, unix_ms, date, or a strftime format.
  std::string format = "iso8601";
  /// Record field whose largest value becomes the next run's lower bound (its state).
  std::string cursor_field;
};

struct EndpointSpec {
  std::string name;
  std::string url;
  std::string method = "GET";
  QueryParams params;
  /// JSON body of a POST; the cursor is added to it when cursor_in_body.
  std::optional<Value> body;
  HttpHeaders headers;
  /// Dotted path to the records array; "" when the page itself is the array.
  std::string record_selector;
  /// Dotted path to each record's id; "" gives records an empty id.
  std::string record_id = "id";
  PaginationSpec pagination;
  std::optional<IncrementalSpec> incremental;
};

/// Formats a UTC timestamp for an incremental query parameter.
std::string FormatWindowBound(int64_t micros, std::string_view format);

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
  HttpRequest FirstRequest(const QueryParams& extra) const;
  /// The request for the page after `pagination`; sets `offset` / `page_number` when used.
  HttpRequest PageRequest(const Value& pagination, const QueryParams& extra, int64_t& offset,
                          int64_t& page_number) const;

  EndpointSpec spec_;
  std::shared_ptr<HttpSession> session_;
  std::optional<Value> max_cursor_;  // Largest incremental cursor_field value of this run.
};

}  // namespace bizon
