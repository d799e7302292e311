#include "connectors/sources/rest_api/rest_endpoint.h"

#include <fmt/format.h>

#include <ctime>

#include "bizon/clock.h"

namespace bizon {
namespace {

bool Truthy(const std::optional<Value>& value) {
  if (!value || value->is_null()) return false;
  if (value->is_bool()) return value->AsBool();
  if (value->is_number()) return value->AsDouble() != 0;
  if (value->is_string()) return !value->AsString().empty() && value->AsString() != "false";
  return true;
}

// Orders two cursor values: numbers numerically, anything else by its text.
bool Greater(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.AsDouble() > b.AsDouble();
  return a.ToDisplayString() > b.ToDisplayString();
}

std::string ParamText(const Value& value) { return value.ToDisplayString(); }

}  // namespace

std::string RecordIdText(const Value& value) {
  if (value.is_string()) return value.AsString();
  if (value.is_integer()) return std::to_string(value.AsInteger());
  return value.ToJson();
}

std::string FormatWindowBound(int64_t micros, std::string_view format) {
  if (format.empty() || format == "iso8601") return FormatIsoTimestamp(micros);
  if (format == "unix") return std::to_string(micros / 1'000'000);
  if (format == "unix_ms") return std::to_string(micros / 1'000);
  std::string pattern = format == "date" ? "%Y-%m-%d" : std::string(format);
  time_t seconds = static_cast<time_t>(micros / 1'000'000);
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char buffer[128];
  // The format comes from the user's config on purpose.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  size_t written = std::strftime(buffer, sizeof(buffer), pattern.c_str(), &parts);
#pragma GCC diagnostic pop
  return std::string(buffer, written);
}

RestEndpoint::RestEndpoint(EndpointSpec spec, std::shared_ptr<HttpSession> session)
    : spec_(std::move(spec)), session_(std::move(session)) {}

bool ResponseAction::Matches(int status, std::string_view body) const {
  if (status_code && *status_code != status) return false;
  return content.empty() || body.find(content) != std::string_view::npos;
}

HttpRequest PageRequest(const EndpointSpec& spec, const Value& pagination, const QueryParams& extra,
                        PagePosition& position, const std::string* url,
                        const Value* body_override) {
  const PaginationSpec& paging = spec.pagination;
  HttpRequest request{
      .url = url != nullptr ? *url : spec.url, .query = spec.params, .headers = spec.headers};
  if (!spec.method.empty()) request.method = spec.method;
  request.query.insert(request.query.end(), extra.begin(), extra.end());
  std::optional<Value> body = body_override != nullptr ? *body_override : spec.body;
  // Sends one paging parameter in the query, or in the JSON body when `in_body`.
  auto send = [&](const std::string& name, Value value) {
    if (paging.in_body) {
      if (!body || !body->is_map()) body = Value::EmptyMap();
      body->Set(name, std::move(value));
    } else {
      request.query.emplace_back(name, value.ToDisplayString());
    }
  };
  switch (paging.type) {
    case PaginationSpec::Type::kNone:
      break;
    case PaginationSpec::Type::kOffset:
      position.offset = pagination.GetInteger("offset", paging.start_offset);
      send(paging.offset_param, Value(position.offset));
      send(paging.limit_param, Value(paging.limit));
      break;
    case PaginationSpec::Type::kPageNumber:
      position.page_number = pagination.GetInteger("page", paging.start_page);
      send(paging.page_param, Value(position.page_number));
      if (!paging.page_size_param.empty() && paging.page_size) {
        send(paging.page_size_param, Value(*paging.page_size));
      }
      break;
    case PaginationSpec::Type::kCursor: {
      std::string cursor = pagination.GetString("cursor");
      if (!cursor.empty()) send(paging.cursor_param, Value(cursor));
      break;
    }
    case PaginationSpec::Type::kNextUrl:
    case PaginationSpec::Type::kLinkHeader: {
      std::string next = pagination.GetString("next");
      if (!next.empty()) {
        // The next URL already carries every query parameter.
        request.url = next;
        request.query.clear();
      }
      break;
    }
  }
  if (body) {
    request.body = body->ToJson();
    request.headers.emplace_back("Content-Type", "application/json");
  }
  return request;
}

namespace {

Result<std::optional<bool>> HasMore(const PaginationSpec& paging, const JsonPage& page) {
  if (paging.has_more_path.empty()) return std::optional<bool>();
  BIZON_ASSIGN_OR_RETURN(std::optional<Value> flag, page.Find(paging.has_more_path));
  return std::optional<bool>(Truthy(flag));
}

Result<std::optional<double>> Total(const PaginationSpec& paging, const JsonPage& page) {
  if (paging.total_path.empty()) return std::optional<double>();
  BIZON_ASSIGN_OR_RETURN(std::optional<Value> total, page.Find(paging.total_path));
  if (!total || !total->is_number()) return std::optional<double>(0);  // No total: the end.
  return std::optional<double>(total->AsDouble());
}

Result<bool> OffsetGoesOn(const PaginationSpec& paging, const JsonPage& page, int64_t next_offset,
                          int64_t count) {
  BIZON_ASSIGN_OR_RETURN(std::optional<bool> more, HasMore(paging, page));
  bool go_on = count > 0 || paging.past_empty_pages;
  if (paging.maximum_offset && next_offset >= *paging.maximum_offset) return false;
  if (more) return go_on && *more;
  BIZON_ASSIGN_OR_RETURN(std::optional<double> total, Total(paging, page));
  if (total) return go_on && static_cast<double>(next_offset) < *total;
  // Without an empty-page stop, maximum_offset (checked above) ends the paging.
  if (paging.past_empty_pages) return true;
  return go_on && count >= paging.limit;
}

Result<bool> PageGoesOn(const PaginationSpec& paging, const JsonPage& page, int64_t page_number,
                        int64_t count) {
  BIZON_ASSIGN_OR_RETURN(std::optional<bool> more, HasMore(paging, page));
  bool go_on = count > 0 || paging.past_empty_pages;
  if (paging.maximum_page && page_number >= *paging.maximum_page) return false;
  if (more) return go_on && *more;
  BIZON_ASSIGN_OR_RETURN(std::optional<double> total_pages, Total(paging, page));
  if (total_pages) {
    // Pages are counted from start_page: the last is start_page + total - 1.
    return go_on && static_cast<double>(page_number - paging.start_page + 1) < *total_pages;
  }
  if (paging.page_size && count < *paging.page_size) return false;
  return go_on;
}

}  // namespace

Result<Value> NextPagination(const PaginationSpec& paging, const JsonPage& page,
                             const PagePosition& position, int64_t count,
                             const std::string& response_url,
                             const std::optional<std::string>& link) {
  Value next = Value::EmptyMap();
  switch (paging.type) {
    case PaginationSpec::Type::kNone:
      break;
    case PaginationSpec::Type::kOffset: {
      // The next offset follows the records received: an API that caps the limit skips nothing.
      // Past empty pages (stop_after_empty_page false) it moves by the limit.
      int64_t next_offset = position.offset + (count > 0 ? count : paging.limit);
      BIZON_ASSIGN_OR_RETURN(bool go_on, OffsetGoesOn(paging, page, next_offset, count));
      if (go_on) next.Set("offset", Value(next_offset));
      break;
    }
    case PaginationSpec::Type::kPageNumber: {
      BIZON_ASSIGN_OR_RETURN(bool go_on, PageGoesOn(paging, page, position.page_number, count));
      if (go_on) next.Set("page", Value(position.page_number + 1));
      break;
    }
    case PaginationSpec::Type::kCursor: {
      BIZON_ASSIGN_OR_RETURN(std::optional<bool> more, HasMore(paging, page));
      BIZON_ASSIGN_OR_RETURN(std::optional<Value> cursor, page.Find(paging.cursor_path));
      std::string text = cursor && !cursor->is_null() ? ParamText(*cursor) : "";
      if (!text.empty() && more.value_or(true)) next.Set("cursor", Value(text));
      break;
    }
    case PaginationSpec::Type::kNextUrl: {
      BIZON_ASSIGN_OR_RETURN(std::optional<Value> url, page.Find(paging.next_url_path));
      if (url && url->is_string() && !url->AsString().empty()) {
        next.Set("next", Value(ResolveUrl(response_url, url->AsString())));
      }
      break;
    }
    case PaginationSpec::Type::kLinkHeader: {
      std::optional<std::string> target = link ? FindLink(*link) : std::nullopt;
      if (target && !target->empty()) next.Set("next", Value(ResolveUrl(response_url, *target)));
      break;
    }
  }
  return next;
}

Result<std::optional<Value>> RestEndpoint::ReadFirstPage(std::string_view path) {
  PagePosition position;
  HttpRequest request = PageRequest(spec_, Value::EmptyMap(), {}, position);
  std::string origin =
      fmt::format("{} {}", request.method, AppendQuery(request.url, request.query));
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Send(request));
  JsonPage page(std::move(response.body), std::move(origin));
  return page.Find(path);
}

Result<SourceIteration> RestEndpoint::Fetch(const Value& pagination, const QueryParams& extra) {
  PagePosition position;
  HttpRequest request = PageRequest(spec_, pagination, extra, position);
  std::string request_url = AppendQuery(request.url, request.query);
  std::string origin = fmt::format("{} {}", request.method, request_url);
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Send(request));
  std::optional<std::string> link;
  if (std::optional<std::string_view> header = response.Header("link")) link = std::string(*header);
  std::string response_url = response.url;
  JsonPage page(std::move(response.body), origin);

  std::vector<std::string> fields;
  bool with_id = !spec_.record_id.empty();
  if (with_id) fields.push_back(spec_.record_id);
  std::string cursor_field = spec_.incremental ? spec_.incremental->cursor_field : "";
  if (!cursor_field.empty()) fields.push_back(cursor_field);

  SourceIteration iteration;
  int64_t now = NowMicros();
  int64_t count = 0;
  BIZON_RETURN_IF_ERROR(page.ForEachObject(
      spec_.record_selector, fields, [&](const JsonObjectView& record) -> Status {
        std::string id;
        if (with_id) {
          if (!record.fields[0] || record.fields[0]->is_null()) {
            return Status(StatusCode::kFailedPrecondition,
                          fmt::format("record {} of the response of {} has no '{}'; set "
                                      "record_id to the field that identifies records",
                                      record.index, origin, spec_.record_id),
                          FailureClass::kSource);
          }
          id = RecordIdText(*record.fields[0]);
        }
        if (!cursor_field.empty()) {
          const std::optional<Value>& value = record.fields[with_id ? 1 : 0];
          if (value && !value->is_null() && (!max_cursor_ || Greater(*value, *max_cursor_))) {
            max_cursor_ = *value;
          }
        }
        iteration.records.Add(id, record.json, now);
        ++count;
        return Status::Ok();
      }));

  BIZON_ASSIGN_OR_RETURN(
      Value next, NextPagination(spec_.pagination, page, position, count, response_url, link));
  if (max_cursor_) {
    iteration.next_state = Value(Value::Map{{"cursor", *max_cursor_}});
    // Carried in the pagination too, so a resumed run keeps the maximum of its earlier pages.
    if (!next.AsMap().empty()) next.Set("max_cursor", *max_cursor_);
  }
  iteration.next_pagination = std::move(next);
  return iteration;
}

Result<SourceIteration> RestEndpoint::FetchAfter(const IncrementalState& state,
                                                 const Value& pagination) {
  if (!spec_.incremental) {
    return Fail(InvalidArgumentError(
        fmt::format("endpoint '{}' has no incremental block; add one or use sync_mode full_refresh",
                    spec_.name)));
  }
  const IncrementalSpec& incremental = *spec_.incremental;
  if (const Value* carried = pagination.Find("max_cursor"); carried != nullptr && !max_cursor_) {
    max_cursor_ = *carried;
  }
  std::string lower;
  const Value* stored = state.state.Find("cursor");
  if (!incremental.cursor_field.empty() && stored != nullptr && !stored->is_null()) {
    lower = ParamText(*stored);
  } else {
    lower = FormatWindowBound(state.last_run_us, incremental.format);
  }
  QueryParams extra;
  if (!incremental.param.empty()) extra.emplace_back(incremental.param, lower);
  if (!incremental.end_param.empty()) {
    extra.emplace_back(incremental.end_param,
                       FormatWindowBound(state.run_started_at_us, incremental.format));
  }
  return Fetch(pagination, extra);
}

}  // namespace bizon
