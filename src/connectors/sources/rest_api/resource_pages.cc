#include "connectors/sources/rest_api/resource_pages.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "bizon/clock.h"

namespace bizon {
namespace {

size_t FieldIndex(std::vector<std::string>& fields, const std::string& field) {
  auto found = std::find(fields.begin(), fields.end(), field);
  if (found != fields.end()) return static_cast<size_t>(found - fields.begin());
  fields.push_back(field);
  return fields.size() - 1;
}

std::string MemberName(std::string_view parent, std::string_view field) {
  std::string name = fmt::format("_{}_{}", parent, field);
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

// `json` (an object's text) with `members` (",\"k\":v..." or "") added before its closing brace.
void AppendWithMembers(std::string& out, std::string_view json, std::string_view members) {
  if (members.empty()) {
    out.append(json);
    return;
  }
  size_t close = json.rfind('}');
  std::string_view head = json.substr(0, close);
  size_t first = head.find_first_not_of(" \t\r\n", 1);
  bool empty = first == std::string_view::npos;
  out.append(head);
  // An empty object takes the members without their leading comma.
  out.append(empty ? members.substr(1) : members);
  out.push_back('}');
}

}  // namespace

ResourcePages::ResourcePages(const std::vector<ResourceSpec>& resources, size_t index,
                             std::shared_ptr<HttpSession> session)
    : resources_(resources), index_(index), session_(std::move(session)) {
  const ResourceSpec& own = spec();
  if (!own.endpoint.record_id.empty()) id_at_ = FieldIndex(fields_, own.endpoint.record_id);
  if (own.endpoint.incremental) {
    cursor_at_ = FieldIndex(fields_, own.endpoint.incremental->cursor_field);
  }
  for (size_t child : own.children) {
    std::vector<size_t> positions;
    for (const std::string& field : resources_[child].parent_fields) {
      positions.push_back(FieldIndex(fields_, field));
    }
    child_fields_at_.push_back(std::move(positions));
  }
}

Result<HttpRequest> ResourcePages::BuildRequest(const ResourceTask& task,
                                                const CursorWindow* window,
                                                PagePosition& position) const {
  const EndpointSpec& endpoint = spec().endpoint;
  QueryParams extra;
  if (window != nullptr) {
    const IncrementalSpec& incremental = *endpoint.incremental;
    if (!incremental.param.empty() && window->start()) {
      extra.emplace_back(incremental.param, window->start()->ToDisplayString());
    }
    if (!incremental.end_param.empty() && incremental.end_value) {
      extra.emplace_back(incremental.end_param, incremental.end_value->ToDisplayString());
    }
  }
  BIZON_ASSIGN_OR_RETURN(std::string url,
                         ResolvePlaceholders(endpoint.url, task.parent, /*for_url=*/true));
  std::optional<Value> body;
  if (endpoint.body) {
    BIZON_ASSIGN_OR_RETURN(body, ResolveBodyPlaceholders(*endpoint.body, task.parent));
  }
  HttpRequest request =
      PageRequest(endpoint, task.page, extra, position, &url, body ? &*body : nullptr);
  if (spec().parent) {
    for (auto& [name, value] : request.query) {
      BIZON_ASSIGN_OR_RETURN(value, ResolvePlaceholders(value, task.parent, false));
    }
    for (auto& [name, value] : request.headers) {
      BIZON_ASSIGN_OR_RETURN(value, ResolvePlaceholders(value, task.parent, false));
    }
  }
  return request;
}

Result<std::optional<HttpResponse>> ResourcePages::Send(HttpRequest request,
                                                        const std::string& origin) {
  if (spec().response_actions.empty()) {
    BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Send(request));
    return std::optional<HttpResponse>(std::move(response));
  }
  request.raise_for_status = false;
  const RetryPolicy& retry = session_->policy().retries;
  for (int retries = 0;; ++retries) {
    BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Send(request));
    BIZON_ASSIGN_OR_RETURN(Verdict verdict, Decide(request, response, origin));
    switch (verdict) {
      case Verdict::kUsual:
        if (!response.ok()) {
          return Fail(
              HttpStatusError(request.method, AppendQuery(request.url, request.query), response));
        }
        return std::optional<HttpResponse>(std::move(response));
      case Verdict::kUse:
        return std::optional<HttpResponse>(std::move(response));
      case Verdict::kIgnore:
        spdlog::info(
            "rest_api resource '{}': ignoring the response of {} ({}), as a response "
            "action says",
            spec().name, origin, response.status);
        return std::optional<HttpResponse>();
      case Verdict::kFail:
        return Fail(
            Status(StatusCode::kFailedPrecondition,
                   fmt::format("rest_api resource '{}': {} returned {}, which a response "
                               "action fails: {}",
                               spec().name, origin, response.status, BodyExcerpt(response.body)),
                   FailureClass::kSource));
      case Verdict::kRetry:
        if (retries >= retry.total) {
          return Fail(Status(StatusCode::kUnavailable,
                             fmt::format("rest_api resource '{}': {} returned {} after {} retries "
                                         "by a response action: {}",
                                         spec().name, origin, response.status, retries,
                                         BodyExcerpt(response.body)),
                             FailureClass::kSource));
        }
        double wait = retry.BackoffSeconds(retries + 1);
        spdlog::warn(
            "Retrying HTTP request in {:.1f} s (response action; retry {} of {}): {} "
            "returned {}",
            wait, retries + 1, retry.total, origin, response.status);
        session_->sleep()(wait);
        break;
    }
  }
}

Result<ResourcePages::Verdict> ResourcePages::Decide(const HttpRequest& request,
                                                     HttpResponse& response,
                                                     const std::string& origin) const {
  for (const ResponseAction& action : spec().response_actions) {
    if (!action.Matches(response.status, response.body)) continue;
    switch (action.action) {
      case ResponseAction::Kind::kIgnore:
        return Verdict::kIgnore;
      case ResponseAction::Kind::kRetry:
        return Verdict::kRetry;
      case ResponseAction::Kind::kFail:
        return Verdict::kFail;
      case ResponseAction::Kind::kPython:
        break;
    }
    BIZON_ASSIGN_OR_RETURN(Verdict verdict, AskHook(action, request, response, origin));
    if (verdict != Verdict::kUsual) return verdict;
  }
  return Verdict::kUsual;
}

Result<ResourcePages::Verdict> ResourcePages::AskHook(const ResponseAction& action,
                                                      const HttpRequest& request,
                                                      HttpResponse& response,
                                                      const std::string& origin) const {
  Value headers = Value::EmptyMap();
  for (const auto& [name, value] : response.headers) headers.Set(name, Value(value));
  Value argument = Value::EmptyMap();
  argument.Set("status_code", Value(response.status));
  argument.Set("headers", std::move(headers));
  argument.Set("body", Value(response.body));
  argument.Set("method", Value(request.method));
  argument.Set("url", Value(AppendQuery(request.url, request.query)));
  BIZON_ASSIGN_OR_RETURN(Value answer, action.hook(argument));
  if (answer.is_null()) return Verdict::kUsual;
  if (answer.is_map() || answer.is_list()) {
    response.body = answer.ToJson();
    return Verdict::kUse;
  }
  std::string word = answer.is_string() ? answer.AsString() : "";
  if (word == "ignore") return Verdict::kIgnore;
  if (word == "retry") return Verdict::kRetry;
  if (word == "fail") return Verdict::kFail;
  return Fail(
      Status(StatusCode::kFailedPrecondition,
             fmt::format("rest_api resource '{}': on_response returned {} for {} ({}); it "
                         "returns \"ignore\", \"retry\", \"fail\", None or the JSON of "
                         "the page",
                         spec().name, BodyExcerpt(answer.ToJson()), origin, response.status),
             FailureClass::kSource));
}

Result<std::string> ResourcePages::SelectorFor(const JsonPage& page) {
  if (!spec().detect_records) return spec().endpoint.record_selector;
  {
    std::lock_guard<std::mutex> lock(selector_mutex_);
    if (detected_selector_) return *detected_selector_;
  }
  size_t length = 0;
  BIZON_ASSIGN_OR_RETURN(std::string selector, page.DetectRecordSelector(&length));
  // An empty list proves nothing: the next page may choose again.
  if (length == 0) return selector;
  std::lock_guard<std::mutex> lock(selector_mutex_);
  if (!detected_selector_) {
    detected_selector_ = selector;
    spdlog::info(
        "rest_api resource '{}': records found at {} ({}); set record_selector to "
        "choose another place",
        spec().name, selector,
        selector != "$" ? "the largest list at the top of the response" : "the response itself");
  }
  return *detected_selector_;
}

std::string ResourcePages::ParentMembers(const ResourceTask& task) const {
  const ResourceSpec& own = spec();
  if (own.include_from_parent.empty()) return "";
  const std::string& parent = resources_[*own.parent].name;
  std::string members;
  for (const std::string& field : own.include_from_parent) {
    members.push_back(',');
    AppendJsonString(members, MemberName(parent, field));
    members.push_back(':');
    const Value* value = task.parent.Find(field);
    members += value != nullptr ? value->ToJson() : "null";
  }
  return members;
}

Result<bool> ResourcePages::KeepByCursor(const JsonObjectView& record, const std::string& id,
                                         const CursorWindow& window, const JsonPage& page,
                                         TaskOutcome& outcome, bool& stop) const {
  const IncrementalSpec& incremental = *spec().endpoint.incremental;
  const std::optional<Value>& cursor = record.fields[*cursor_at_];
  if (!cursor || cursor->is_null()) {
    switch (incremental.on_cursor_value_missing) {
      case IncrementalSpec::MissingCursor::kRaise:
        return Fail(Status(StatusCode::kFailedPrecondition,
                           fmt::format("record {} of the response of {} has no '{}' (the "
                                       "incremental cursor); set on_cursor_value_missing to "
                                       "include or exclude such records",
                                       record.index, page.origin(), incremental.cursor_field),
                           FailureClass::kSource));
      case IncrementalSpec::MissingCursor::kExclude:
        return false;
      case IncrementalSpec::MissingCursor::kInclude:
        return true;
    }
  }
  CursorWindow::Verdict verdict = window.Judge(*cursor, id);
  if (verdict == CursorWindow::Verdict::kStop) stop = true;
  if (verdict != CursorWindow::Verdict::kKeep) return false;
  outcome.cursors.Add(*cursor, id, incremental.lag);
  return true;
}

Result<int64_t> ResourcePages::TakeRecords(const JsonPage& page, const ResourceTask& task,
                                           const CursorWindow* window, TaskOutcome& outcome,
                                           bool& stop) {
  const ResourceSpec& own = spec();
  BIZON_ASSIGN_OR_RETURN(std::string selector, SelectorFor(page));
  std::string members = ParentMembers(task);
  int64_t now = NowMicros();
  int64_t count = 0;
  BIZON_RETURN_IF_ERROR(page.ForEachSelected(selector, fields_, [&](const JsonObjectView& record) {
    ++count;
    std::string id;
    if (id_at_) {
      const std::optional<Value>& value = record.fields[*id_at_];
      if (!value || value->is_null()) {
        return Status(StatusCode::kFailedPrecondition,
                      fmt::format("record {} of the response of {} has no '{}'; set record_id to "
                                  "the field that identifies records",
                                  record.index, page.origin(), own.endpoint.record_id),
                      FailureClass::kSource);
      }
      id = RecordIdText(*value);
    }
    if (window != nullptr) {
      auto keep = KeepByCursor(record, id, *window, page, outcome, stop);
      if (!keep) return keep.error();
      if (!*keep) return Status::Ok();
    }
    std::string& payloads = outcome.records.OpenPayload();
    AppendWithMembers(payloads, record.json, members);
    outcome.records.CommitPayload(id, now, own.destination_id);
    for (size_t c = 0; c < own.children.size(); ++c) {
      ResourceTask child{.resource = own.children[c]};
      const std::vector<std::string>& names = resources_[own.children[c]].parent_fields;
      for (size_t f = 0; f < names.size(); ++f) {
        const std::optional<Value>& value = record.fields[child_fields_at_[c][f]];
        child.parent.Set(names[f], value.value_or(Value()));
      }
      outcome.children.push_back(std::move(child));
    }
    return Status::Ok();
  }));
  return count;
}

Result<TaskOutcome> ResourcePages::Read(const ResourceTask& task, const CursorWindow* window) {
  PagePosition position;
  BIZON_ASSIGN_OR_RETURN(HttpRequest request, BuildRequest(task, window, position));
  std::string origin =
      fmt::format("{} {}", request.method, AppendQuery(request.url, request.query));
  BIZON_ASSIGN_OR_RETURN(std::optional<HttpResponse> response, Send(std::move(request), origin));
  TaskOutcome outcome;
  if (!response) return outcome;  // Ignored: no records, no next page.
  std::optional<std::string> link;
  if (std::optional<std::string_view> header = response->Header("link")) {
    link = std::string(*header);
  }
  std::string response_url = response->url;
  JsonPage page(std::move(response->body), origin);
  bool stop = false;
  BIZON_ASSIGN_OR_RETURN(int64_t count, TakeRecords(page, task, window, outcome, stop));
  if (stop) return outcome;
  BIZON_ASSIGN_OR_RETURN(Value next, NextPagination(spec().endpoint.pagination, page, position,
                                                    count, response_url, link));
  if (!next.AsMap().empty()) outcome.next_page = std::move(next);
  return outcome;
}

}  // namespace bizon
