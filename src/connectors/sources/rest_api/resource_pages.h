// ResourcePages: reads one page of one rest_api resource for one task (a top-level resource, or a
// child for one parent record), and says what comes next: the next page of the task, and a child
// task per kept record and child resource.
//
// Each read builds the request (placeholders resolved from the task's parent values, the
// incremental window's bounds as params), sends it through the resource's session and its
// response actions, finds the records (the record_selector, or the detected list), keeps those
// the incremental window keeps, and appends them to the outcome's batch as the API's bytes, with
// `_<parent>_<field>` members added for include_from_parent.
//
// Thread-safety: Read() may be called from several threads at once (the children of one round);
// the detected record selector is shared under a mutex, everything else is read only.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bizon/record_batch.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "connectors/sources/rest_api/incremental_cursor.h"
#include "connectors/sources/rest_api/rest_resources.h"
#include "http/http_session.h"
#include "http/json_page.h"

namespace bizon {

/// One unit of work: a page of a resource, for a parent record when the resource is a child.
struct ResourceTask {
  size_t resource = 0;
  /// The parent record's fields the resource reads ({field: value}); empty for a top-level one.
  Value parent = Value::EmptyMap();
  /// The pagination of the page to read ({} for the first).
  Value page = Value::EmptyMap();
};

struct TaskOutcome {
  RecordBatch records;
  /// The task's next page; unset when this was its last.
  std::optional<Value> next_page;
  /// One per kept record and child resource, in record order.
  std::vector<ResourceTask> children;
  /// The (cursor, id) of the records kept, for the resource's incremental state.
  CursorState cursors;
};

class ResourcePages {
 public:
  /// `resources` outlives this reader; `index` is this resource's place in it.
  ResourcePages(const std::vector<ResourceSpec>& resources, size_t index,
                std::shared_ptr<HttpSession> session);

  /// Reads `task`'s page. `window`: the resource's incremental window, when it has one.
  Result<TaskOutcome> Read(const ResourceTask& task, const CursorWindow* window);

  const ResourceSpec& spec() const { return resources_[index_]; }

 private:
  Result<HttpRequest> BuildRequest(const ResourceTask& task, const CursorWindow* window,
                                   PagePosition& position) const;
  /// The response, or nullopt when a response action says to ignore it.
  Result<std::optional<HttpResponse>> Send(HttpRequest request, const std::string& origin);
  /// What the response actions make of a response: kUsual when none decides (an error status
  /// then fails as without actions), kUse when a hook gave the page to use instead.
  enum class Verdict { kUsual, kUse, kIgnore, kRetry, kFail };
  /// The first action that matches `response` and decides; a hook may replace its body.
  Result<Verdict> Decide(const HttpRequest& request, HttpResponse& response,
                         const std::string& origin) const;
  /// Calls a Python action's hook with {status_code, headers, body, method, url}.
  Result<Verdict> AskHook(const ResponseAction& action, const HttpRequest& request,
                          HttpResponse& response, const std::string& origin) const;
  /// The record selector for `page`: the declared one, else the one detected (logged once).
  Result<std::string> SelectorFor(const JsonPage& page);
  /// Appends the records of `page` the window keeps to `outcome`; sets `stop` when the row
  /// order says the range is past. Returns how many records the page held.
  Result<int64_t> TakeRecords(const JsonPage& page, const ResourceTask& task,
                              const CursorWindow* window, TaskOutcome& outcome, bool& stop);
  /// Whether the window keeps `record`; sets `stop` when the row order says the range is past,
  /// and adds a kept record's cursor to `outcome`.
  Result<bool> KeepByCursor(const JsonObjectView& record, const std::string& id,
                            const CursorWindow& window, const JsonPage& page, TaskOutcome& outcome,
                            bool& stop) const;
  /// `,"_<parent>_<field>":<value>...` for the task's include_from_parent fields.
  std::string ParentMembers(const ResourceTask& task) const;

  const std::vector<ResourceSpec>& resources_;
  size_t index_;
  std::shared_ptr<HttpSession> session_;
  // The fields each record is read for: its id, its cursor, what its children need.
  std::vector<std::string> fields_;
  std::optional<size_t> id_at_;
  std::optional<size_t> cursor_at_;
  std::vector<std::vector<size_t>> child_fields_at_;  // Per child: its parent_fields in fields_.
  std::mutex selector_mutex_;
  std::optional<std::string> detected_selector_;
};

}  // namespace bizon
