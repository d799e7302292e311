#include "connectors/sources/rest_api/rest_endpoint.h"

#include <fmt/format.h>

#include <ctime>

#include "bizon/clock.h"

namespace bizon {
namespace {

// A record id as text: strings as they are, numbers in decimal.
std::string IdText(const Value& value) {
  if (value.is_string()) return value.AsString();
  if (value.is_integer()) return std::to_string(value.AsInteger());
  return value.ToJson();
}

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

HttpRequest RestEndpoint::FirstRequest(const QueryParams& extra) const {
  HttpRequest request{
      .method = spec_.method, .url = spec_.url, .query = spec_.params, .headers = spec_.headers};
  request.query.insert(request.query.end(), extra.begin(), extra.end());
  return request;
}

HttpRequest RestEndpoint::PageRequest(const Value& pagination, const QueryParams& extra,
                                      int64_t& offset, int64_t& page_number) const {
  const PaginationSpec& paging = spec_.pagination;
  HttpRequest request = FirstRequest(extra);
  std::optional<Value> body = spec_.body;
  switch (paging.type) {
    case PaginationSpec::Type::kNone:
      break;
    case PaginationSpec::Type::kOffset:
      offset = pagination.GetInteger("offset", paging.start_offset);
      request.query.emplace_back(paging.offset_param, std::to_string(offset));
      request.query.emplace_back(paging.limit_param, std::to_string(paging.limit));
      break;
    case PaginationSpec::Type::kPageNumber:
      page_number = pagination.GetInteger("page", paging.start_page);
      request.query.emplace_back(paging.page_param, std::to_string(page_number));
      if (!paging.page_size_param.empty() && paging.page_size > 0) {
        request.query.emplace_back(paging.page_size_param, std::to_string(paging.page_size));
      }
      break;
    case PaginationSpec::Type::kCursor: {
      std::string cursor = pagination.GetString("cursor");
      if (cursor.empty()) break;
      if (paging.cursor_in_body) {
        if (!body || !body->is_map()) body = Value::EmptyMap();
        body->Set(paging.cursor_param, Value(cursor));
      } else {
        request.query.emplace_back(paging.cursor_param, cursor);
      }
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

Result<std::optional<Value>> RestEndpoint::ReadFirstPage(std::string_view path) {
  int64_t offset = 0;
  int64_t page_number = 0;
  HttpRequest request = PageRequest(Value::EmptyMap(), {}, offset, page_number);
  std::string origin =
      fmt::format("{} {}", request.method, AppendQuery(request.url, request.query));
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Send(request));
  JsonPage page(std::move(response.body), std::move(origin));
  return page.Find(path);
}

Result<SourceIteration> RestEndpoint::Fetch(const Value& pagination, const QueryParams& extra) {
  const PaginationSpec& paging = spec_.pagination;
  int64_t offset = 0;
  int64_t page_number = 0;
  HttpRequest request = PageRequest(pagination, extra, offset, page_number);
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
          id = IdText(*record.fields[0]);
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

  auto has_more = [&]() -> Result<std::optional<bool>> {
    if (paging.has_more_path.empty()) return std::optional<bool>();
    BIZON_ASSIGN_OR_RETURN(std::optional<Value> flag, page.Find(paging.has_more_path));
    return std::optional<bool>(Truthy(flag));
  };

  Value next = Value::EmptyMap();
  switch (paging.type) {
    case PaginationSpec::Type::kNone:
      break;
    case PaginationSpec::Type::kOffset: {
      BIZON_ASSIGN_OR_RETURN(std::optional<bool> more, has_more());
      // The next offset follows the records received: an API that caps the limit skips nothing.
      int64_t next_offset = offset + count;
      bool go_on = count > 0;
      if (more) {
        go_on = go_on && *more;
      } else if (!paging.total_path.empty()) {
        BIZON_ASSIGN_OR_RETURN(std::optional<Value> total, page.Find(paging.total_path));
        go_on = go_on && total && total->is_number() &&
                static_cast<double>(next_offset) < total->AsDouble();
      } else {
        go_on = go_on && count >= paging.limit;
      }
      if (go_on) next.Set("offset", Value(next_offset));
      break;
    }
    case PaginationSpec::Type::kPageNumber: {
      BIZON_ASSIGN_OR_RETURN(std::optional<bool> more, has_more());
      bool go_on = count > 0;
      if (more) {
        go_on = go_on && *more;
      } else if (paging.page_size > 0) {
        go_on = go_on && count >= paging.page_size;
      }
      if (go_on) next.Set("page", Value(page_number + 1));
      break;
    }
    case PaginationSpec::Type::kCursor: {
      BIZON_ASSIGN_OR_RETURN(std::optional<bool> more, has_more());
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
  QueryParams extra = {{incremental.param, lower}};
  if (!incremental.end_param.empty()) {
    extra.emplace_back(incremental.end_param,
                       FormatWindowBound(state.run_started_at_us, incremental.format));
  }
  return Fetch(pagination, extra);
}

}  // namespace bizon
