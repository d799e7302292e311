// notion: pages, databases, data sources, blocks and users of a Notion workspace (API version
// 2025-09-03), with incremental reads through the search API: the reference incremental source.
// The streams and their pagination follow the original connector; see README.md.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>

#include "bizon/clock.h"
#include "bizon/config_spec.h"
#include "bizon/registry.h"
#include "bizon/value.h"
#include "common/parallel.h"
#include "connectors/registration.h"
#include "connectors/sources/notion/notion_markdown.h"
#include "http/json_page.h"
#include "http/source_session.h"

namespace bizon {
namespace {

constexpr std::string_view kNotionVersion = "2025-09-03";

// The original's Notion session: its own retries (total 10, backoff 2, 429 and 5xx, GET, POST and
// PATCH, Retry-After honoured as sent), no timeout, and no raise-for-status hook: every call
// checks the status itself.
HttpPolicy NotionPolicy() {
  HttpPolicy policy;
  policy.raise_for_status = false;
  policy.retries.total = 10;
  policy.retries.status_budget.reset();
  policy.retries.backoff_factor = 2;
  policy.retries.status_forcelist = {429, 500, 502, 503, 504};
  policy.retries.allowed_methods = {"GET", "POST", "PATCH"};
  policy.retries.retry_after_max.reset();
  return policy;
}

using OptionalId = std::optional<std::string>;

Value IdValue(const OptionalId& id) { return id ? Value(*id) : Value(); }

OptionalId IdOf(const Value* value) {
  if (value == nullptr || !value->is_string() || value->AsString().empty()) return std::nullopt;
  return value->AsString();
}

std::string StringField(const std::optional<Value>& value) {
  return value && value->is_string() ? value->AsString() : "";
}

// `object` (a JSON object's text) with `fields` added at its end, without parsing it.
std::string WithFields(std::string_view object, const Value::Map& fields) {
  std::string out(object);
  while (!out.empty() && out.back() != '}') out.pop_back();
  if (out.empty()) return std::string(object);
  out.pop_back();
  size_t last = out.find_last_not_of(" \t\r\n");
  bool empty = last == std::string::npos || out[last] == '{';
  for (const auto& [key, value] : fields) {
    if (!empty) out.push_back(',');
    empty = false;
    AppendJsonString(out, key);
    out.push_back(':');
    value.AppendJson(out);
  }
  out.push_back('}');
  return out;
}

// Python's datetime.isoformat() of an aware UTC time, as the original sends `last_run`:
// "2024-03-01T09:00:00+00:00", with ".ffffff" only when there are microseconds.
std::string PythonIsoFormat(int64_t micros) {
  std::string text = FormatIsoTimestamp(micros);  // "...T09:00:00.000000Z"
  if (!text.empty() && text.back() == 'Z') text.pop_back();
  if (text.ends_with(".000000")) text.resize(text.size() - 7);
  return text + "+00:00";
}

// `edited` is strictly after `last`. The original compares the texts; timestamps are compared as
// times here when both parse (Notion's "…000Z" against Python's "+00:00" would otherwise order
// by accident), and as texts when one does not.
bool EditedAfter(std::string_view edited, std::string_view last) {
  auto a = ParseTimestamp(edited);
  auto b = ParseTimestamp(last);
  if (a && b) return *a > *b;
  return edited > last;
}

/// One unit of work of the block streams: a page or database whose child blocks are read.
struct BlockItem {
  std::string block_id;
  OptionalId input_db_id;
  OptionalId input_page_id;
  OptionalId source_page_id;

  Value ToValue() const {
    return Value(Value::Map{{"block_id", Value(block_id)},
                            {"input_db_id", IdValue(input_db_id)},
                            {"input_page_id", IdValue(input_page_id)},
                            {"source_page_id", IdValue(source_page_id)}});
  }
  static BlockItem FromValue(const Value& value) {
    return {value.GetString("block_id"), IdOf(value.Find("input_db_id")),
            IdOf(value.Find("input_page_id")), IdOf(value.Find("source_page_id"))};
  }
};

/// A block as read, with its lineage: the block JSON enriched with it, and the parts the markdown
/// record needs.
struct FetchedBlock {
  std::string id;
  std::string type;
  std::string json;  // The block with parent_block_id, depth, ... added.
  std::string parent_block_id;
  OptionalId input_db_id;
  OptionalId input_page_id;
  OptionalId source_page_id;
  int64_t depth = 0;
  int64_t block_order = 0;
  int64_t page_order = 0;
};

struct ListedObject {
  std::string id;
  std::string json;
  std::string object;  // "page", "data_source", "block", ...
  std::string last_edited_time;
  std::string parent_type;
  std::string parent_database_id;
  std::string type;
  bool has_children = false;
};

struct ListPage {
  std::vector<ListedObject> results;
  bool has_more = false;
  std::string next_cursor;
};

struct DatabaseInfo {
  std::string id;
  std::string json;
  std::string title;
  std::vector<ListedObject> data_sources;  // id and raw JSON of each {id, name}
};

class NotionSource final : public Source {
 public:
  // `options`: the source block, read against NotionFields(); the caller checks its status.
  NotionSource(const std::string& stream, OptionReader& options,
               std::shared_ptr<HttpSession> session)
      : stream_(stream),
        base_url_(options.String("base_url")),
        recursive_(options.Boolean("fetch_blocks_recursively")),
        max_depth_(options.Integer("max_recursion_depth")),
        page_size_(options.Integer("page_size")),
        max_workers_(options.Integer("max_workers")),
        session_(std::move(session)) {
    if (const Value* ids = options.Find("database_ids"); ids != nullptr && ids->is_list()) {
      for (const Value& id : ids->AsList()) database_ids_.push_back(id.ToDisplayString());
    }
    if (const Value* ids = options.Find("page_ids"); ids != nullptr && ids->is_list()) {
      for (const Value& id : ids->AsList()) page_ids_.push_back(id.ToDisplayString());
    }
    if (const Value* filters = options.Find("database_filters");
        filters != nullptr && filters->is_map()) {
      database_filters_ = *filters;
    }
  }

  Status CheckConnection() override {
    auto users = Call("GET", "/users", {{"page_size", "1"}});
    return users ? Status::Ok() : users.error();
  }

  Result<SourceIteration> Get(const Value& pagination) override {
    if (stream_ == "users") return Users(pagination);
    if (stream_ == "databases") return Databases(pagination, /*as_data_sources=*/false);
    if (stream_ == "data_sources") return Databases(pagination, /*as_data_sources=*/true);
    if (stream_ == "pages") return Pages(pagination);
    if (stream_ == "blocks")
      return Blocks(pagination, /*markdown=*/false, &NotionSource::ConfiguredItems);
    if (stream_ == "blocks_markdown")
      return Blocks(pagination, true, &NotionSource::ConfiguredItems);
    if (stream_ == "all_pages") return SearchStream(pagination, "page");
    if (stream_ == "all_data_sources") return SearchStream(pagination, "data_source");
    if (stream_ == "all_databases") return AllDatabases(pagination);
    if (stream_ == "all_blocks_markdown")
      return Blocks(pagination, true, &NotionSource::WorkspaceItems);
    return Fail(InvalidArgumentError(fmt::format("stream {} is not a Notion stream", stream_)));
  }

  Result<SourceIteration> GetRecordsAfter(const IncrementalState& state,
                                          const Value& pagination) override {
    last_ = PythonIsoFormat(state.last_run_us);
    if (stream_ == "pages" || stream_ == "all_pages") return EditedPages(pagination);
    if (stream_ == "databases" || stream_ == "all_databases") return EditedDatabases(pagination);
    if (stream_ == "blocks") return Blocks(pagination, false, &NotionSource::EditedPageItems);
    if (stream_ == "blocks_markdown" || stream_ == "all_blocks_markdown") {
      return Blocks(pagination, true, &NotionSource::EditedDatabaseItems);
    }
    spdlog::warn("Stream {} does not support incremental sync, falling back to full refresh",
                 stream_);
    return Get(pagination);
  }

 private:
  // How a block stream finds its pages on the first call.
  using ItemCollector = Result<std::vector<BlockItem>> (NotionSource::*)();

  // --- HTTP ------------------------------------------------------------------------------------

  Result<JsonPage> Call(std::string method, const std::string& path, QueryParams query = {},
                        std::optional<Value> body = std::nullopt) {
    HttpRequest request{
        .method = std::move(method), .url = JoinUrl(base_url_, path), .query = std::move(query)};
    if (body) request.body = body->ToJson();
    std::string url = AppendQuery(request.url, request.query);
    std::string method_name = request.method;
    BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Send(request));
    // The session hands every status back: each call checks its own, as the original's do.
    if (!response.ok()) return Fail(HttpStatusError(method_name, url, response));
    return JsonPage(std::move(response.body), fmt::format("{} {}", method_name, url));
  }

  Result<ListPage> ReadList(const JsonPage& page) {
    ListPage list;
    BIZON_RETURN_IF_ERROR(page.ForEachObject(
        "results",
        {"id", "object", "last_edited_time", "parent.type", "parent.database_id", "type",
         "has_children"},
        [&](const JsonObjectView& item) {
          ListedObject listed{.id = StringField(item.fields[0]),
                              .json = std::string(item.json),
                              .object = StringField(item.fields[1]),
                              .last_edited_time = StringField(item.fields[2]),
                              .parent_type = StringField(item.fields[3]),
                              .parent_database_id = StringField(item.fields[4]),
                              .type = StringField(item.fields[5])};
          listed.has_children =
              item.fields[6] && item.fields[6]->is_bool() && item.fields[6]->AsBool();
          list.results.push_back(std::move(listed));
          return Status::Ok();
        },
        /*missing_is_empty=*/true));
    BIZON_ASSIGN_OR_RETURN(std::optional<Value> more, page.Find("has_more"));
    BIZON_ASSIGN_OR_RETURN(std::optional<Value> cursor, page.Find("next_cursor"));
    list.has_more = more && more->is_bool() && more->AsBool();
    list.next_cursor = StringField(cursor);
    if (list.next_cursor.empty()) list.has_more = false;
    return list;
  }

  Result<ListPage> Search(const std::string& cursor, bool sorted) {
    Value body = Value::EmptyMap();
    body.Set("page_size", Value(page_size_));
    if (!cursor.empty()) body.Set("start_cursor", Value(cursor));
    if (sorted) {
      body.Set("sort",
               Value(Value::Map{{"direction", "descending"}, {"timestamp", "last_edited_time"}}));
    }
    BIZON_ASSIGN_OR_RETURN(JsonPage page, Call("POST", "/search", {}, body));
    return ReadList(page);
  }

  // A search page reduced to objects of `object` edited after last_run; an older one ends it.
  Result<ListPage> FilteredSearch(const std::string& cursor, std::string_view object) {
    BIZON_ASSIGN_OR_RETURN(ListPage page, Search(cursor, /*sorted=*/true));
    ListPage kept;
    kept.has_more = page.has_more;
    kept.next_cursor = page.next_cursor;
    for (ListedObject& item : page.results) {
      if (item.object != object) continue;
      if (!EditedAfter(item.last_edited_time, last_)) {
        kept.has_more = false;
        break;
      }
      kept.results.push_back(std::move(item));
    }
    return kept;
  }

  Result<ListPage> Query(const std::string& data_source_id, const std::string& cursor,
                         const Value* filter) {
    Value body = Value::EmptyMap();
    body.Set("page_size", Value(page_size_));
    if (!cursor.empty()) body.Set("start_cursor", Value(cursor));
    if (filter != nullptr && !filter->is_null()) body.Set("filter", *filter);
    BIZON_ASSIGN_OR_RETURN(
        JsonPage page,
        Call("POST", fmt::format("/data_sources/{}/query", data_source_id), {}, body));
    return ReadList(page);
  }

  Result<std::vector<ListedObject>> QueryAll(const std::string& data_source_id,
                                             const Value* filter) {
    std::vector<ListedObject> pages;
    std::string cursor;
    while (true) {
      BIZON_ASSIGN_OR_RETURN(ListPage page, Query(data_source_id, cursor, filter));
      for (ListedObject& item : page.results) pages.push_back(std::move(item));
      if (!page.has_more) return pages;
      cursor = page.next_cursor;
    }
  }

  Result<DatabaseInfo> GetDatabase(const std::string& database_id) {
    BIZON_ASSIGN_OR_RETURN(JsonPage page, Call("GET", fmt::format("/databases/{}", database_id)));
    DatabaseInfo info;
    info.json = std::string(page.text());
    BIZON_ASSIGN_OR_RETURN(std::optional<Value> id, page.Find("id"));
    info.id = id && id->is_string() ? id->AsString() : database_id;
    BIZON_ASSIGN_OR_RETURN(std::optional<Value> title, page.Find("title"));
    if (title && title->is_list()) {
      for (const Value& part : title->AsList()) info.title += part.GetString("plain_text");
    }
    BIZON_RETURN_IF_ERROR(page.ForEachObject(
        "data_sources", {"id"},
        [&](const JsonObjectView& source) {
          info.data_sources.push_back(
              {.id = StringField(source.fields[0]), .json = std::string(source.json)});
          return Status::Ok();
        },
        /*missing_is_empty=*/true));
    return info;
  }

  const Value* FilterFor(const std::string& database_id) const {
    return database_filters_.Find(database_id);
  }

  // --- Simple streams --------------------------------------------------------------------------

  Result<SourceIteration> Users(const Value& pagination) {
    QueryParams query = {{"page_size", std::to_string(page_size_)}};
    std::string cursor = pagination.GetString("start_cursor");
    if (!cursor.empty()) query.emplace_back("start_cursor", cursor);
    BIZON_ASSIGN_OR_RETURN(JsonPage page, Call("GET", "/users", std::move(query)));
    BIZON_ASSIGN_OR_RETURN(ListPage list, ReadList(page));
    SourceIteration iteration;
    int64_t now = NowMicros();
    for (const ListedObject& user : list.results) iteration.records.Add(user.id, user.json, now);
    if (list.has_more)
      iteration.next_pagination = Value(Value::Map{{"start_cursor", list.next_cursor}});
    return iteration;
  }

  // One configured database per iteration: the database itself, or its data sources.
  Result<SourceIteration> Databases(const Value& pagination, bool as_data_sources) {
    std::vector<std::string> remaining;
    if (const Value* ids = pagination.Find("remaining_ids"); ids != nullptr && ids->is_list()) {
      for (const Value& id : ids->AsList()) remaining.push_back(id.ToDisplayString());
    } else {
      remaining = database_ids_;
    }
    SourceIteration iteration;
    if (remaining.empty()) {
      if (pagination.Find("remaining_ids") == nullptr) {
        spdlog::warn("No database_ids configured, returning empty results");
      }
      return iteration;
    }
    std::string database_id = remaining.front();
    remaining.erase(remaining.begin());
    int64_t now = NowMicros();
    auto database = GetDatabase(database_id);
    if (!database) {
      spdlog::error("Failed to fetch database {}: {}", database_id, database.error().message());
    } else if (!as_data_sources) {
      iteration.records.Add(database->id, database->json, now);
    } else {
      for (const ListedObject& source : database->data_sources) {
        iteration.records.Add(
            source.id,
            WithFields(source.json, {{"parent_database_id", Value(database_id)},
                                     {"parent_database_title", Value(database->title)}}),
            now);
      }
    }
    if (!remaining.empty()) {
      Value::List ids(remaining.begin(), remaining.end());
      iteration.next_pagination = Value(Value::Map{{"remaining_ids", Value(std::move(ids))}});
    }
    return iteration;
  }

  Result<SourceIteration> SearchStream(const Value& pagination, std::string_view object) {
    BIZON_ASSIGN_OR_RETURN(ListPage page, Search(pagination.GetString("start_cursor"), false));
    SourceIteration iteration;
    int64_t now = NowMicros();
    for (const ListedObject& item : page.results) {
      if (item.object == object) iteration.records.Add(item.id, item.json, now);
    }
    if (page.has_more)
      iteration.next_pagination = Value(Value::Map{{"start_cursor", page.next_cursor}});
    return iteration;
  }

  // Every database that parents a data source the integration sees, one per iteration.
  Result<SourceIteration> AllDatabases(const Value& pagination) {
    std::vector<std::string> ids;
    if (pagination.GetBool("dbs_loaded")) {
      if (const Value* list = pagination.Find("db_ids_to_fetch");
          list != nullptr && list->is_list()) {
        for (const Value& id : list->AsList()) ids.push_back(id.ToDisplayString());
      }
    } else {
      std::string cursor;
      std::set<std::string> seen;
      while (true) {
        BIZON_ASSIGN_OR_RETURN(ListPage page, Search(cursor, false));
        for (const ListedObject& item : page.results) {
          if (item.object != "data_source" || item.parent_type != "database_id") continue;
          if (seen.insert(item.parent_database_id).second) ids.push_back(item.parent_database_id);
        }
        if (!page.has_more) break;
        cursor = page.next_cursor;
      }
    }
    SourceIteration iteration;
    if (ids.empty()) return iteration;
    std::string database_id = ids.front();
    ids.erase(ids.begin());
    auto database = GetDatabase(database_id);
    if (database) {
      iteration.records.Add(database->id, database->json, NowMicros());
    } else {
      spdlog::error("Failed to fetch database {}: {}", database_id, database.error().message());
    }
    if (!ids.empty()) {
      Value::List rest(ids.begin(), ids.end());
      iteration.next_pagination =
          Value(Value::Map{{"db_ids_to_fetch", Value(std::move(rest))}, {"dbs_loaded", true}});
    }
    return iteration;
  }

  // --- pages: data sources of the configured databases, then the configured pages ----------

  // Where the pages stream stands: the data sources still to read, the one being read and the
  // cursor of its next page, then the configured pages still to read.
  struct PagesPosition {
    Value::List remaining_sources;
    Value current;
    std::string cursor;
    Value::List remaining_pages;

    // The pagination that goes on at `current_source` (null: the next one) from `next_cursor`.
    Value Pagination(const Value& current_source, const std::string& next_cursor) const {
      return Value(
          Value::Map{{"remaining_data_sources", Value(remaining_sources)},
                     {"current_data_source", current_source},
                     {"data_source_cursor", next_cursor.empty() ? Value() : Value(next_cursor)},
                     {"remaining_page_ids", Value(remaining_pages)},
                     {"data_sources_loaded", true}});
    }
  };

  // The position the pagination holds, or on the first call every data source of the
  // configured databases and every configured page.
  PagesPosition StartOfPages(const Value& pagination) {
    PagesPosition position;
    if (pagination.GetBool("data_sources_loaded")) {
      if (const Value* list = pagination.Find("remaining_data_sources"); list && list->is_list()) {
        position.remaining_sources = list->AsList();
      }
      if (const Value* value = pagination.Find("current_data_source")) position.current = *value;
      position.cursor = pagination.GetString("data_source_cursor");
      if (const Value* list = pagination.Find("remaining_page_ids"); list && list->is_list()) {
        position.remaining_pages = list->AsList();
      }
      return position;
    }
    for (const std::string& database_id : database_ids_) {
      auto database = GetDatabase(database_id);
      if (!database) {
        spdlog::error("Failed to fetch database {}: {}", database_id, database.error().message());
        continue;
      }
      for (const ListedObject& source : database->data_sources) {
        position.remaining_sources.push_back(
            Value(Value::Map{{"ds_id", Value(source.id)}, {"db_id", Value(database_id)}}));
      }
    }
    position.remaining_pages.assign(page_ids_.begin(), page_ids_.end());
    return position;
  }

  Result<SourceIteration> Pages(const Value& pagination) {
    PagesPosition position = StartOfPages(pagination);
    Value::List& remaining_sources = position.remaining_sources;
    const Value& current = position.current;
    Value::List& remaining_pages = position.remaining_pages;
    SourceIteration iteration;
    int64_t now = NowMicros();
    auto emit = [&](const ListPage& page) {
      for (const ListedObject& item : page.results) iteration.records.Add(item.id, item.json, now);
    };

    // The rest of the data source being read.
    if (current.is_map() && !position.cursor.empty()) {
      std::string db_id = current.GetString("db_id");
      auto page = Query(current.GetString("ds_id"), position.cursor, FilterFor(db_id));
      if (!page) {
        spdlog::error("Failed to query data source {}: {}", current.GetString("ds_id"),
                      page.error().message());
      } else {
        emit(*page);
        if (page->has_more) {
          iteration.next_pagination = position.Pagination(current, page->next_cursor);
          return iteration;
        }
      }
    }
    // The first page of the next data source.
    if (!remaining_sources.empty()) {
      Value source = remaining_sources.front();
      remaining_sources.erase(remaining_sources.begin());
      auto page = Query(source.GetString("ds_id"), "", FilterFor(source.GetString("db_id")));
      if (!page) {
        spdlog::error("Failed to query data source {}: {}", source.GetString("ds_id"),
                      page.error().message());
        iteration.next_pagination = position.Pagination(Value(), "");
        return iteration;
      }
      emit(*page);
      if (page->has_more) {
        iteration.next_pagination = position.Pagination(source, page->next_cursor);
        return iteration;
      }
      if (!remaining_sources.empty()) {
        iteration.next_pagination = position.Pagination(Value(), "");
        return iteration;
      }
    }
    // Then the configured pages, one per call.
    if (!remaining_pages.empty()) {
      std::string page_id = remaining_pages.front().ToDisplayString();
      remaining_pages.erase(remaining_pages.begin());
      auto page = Call("GET", fmt::format("/pages/{}", page_id));
      if (!page) {
        spdlog::error("Failed to fetch page {}: {}", page_id, page.error().message());
      } else {
        iteration.records.Add(page_id, page->text(), now);
      }
      if (!remaining_pages.empty()) {
        iteration.next_pagination = position.Pagination(Value(), "");
        return iteration;
      }
    }
    return iteration;
  }

  // --- incremental pages and databases -----------------------------------------------------

  Result<SourceIteration> EditedPages(const Value& pagination) {
    BIZON_ASSIGN_OR_RETURN(ListPage page,
                           FilteredSearch(pagination.GetString("start_cursor"), "page"));
    SourceIteration iteration;
    int64_t now = NowMicros();
    for (const ListedObject& item : page.results) iteration.records.Add(item.id, item.json, now);
    if (page.has_more)
      iteration.next_pagination = Value(Value::Map{{"start_cursor", page.next_cursor}});
    return iteration;
  }

  Result<SourceIteration> EditedDatabases(const Value& pagination) {
    BIZON_ASSIGN_OR_RETURN(ListPage page,
                           FilteredSearch(pagination.GetString("start_cursor"), "data_source"));
    SourceIteration iteration;
    int64_t now = NowMicros();
    std::set<std::string> seen;
    for (const ListedObject& source : page.results) {
      if (source.parent_database_id.empty() || !seen.insert(source.parent_database_id).second) {
        continue;
      }
      auto database = GetDatabase(source.parent_database_id);
      if (!database) {
        spdlog::error("Failed to fetch database {}: {}", source.parent_database_id,
                      database.error().message());
        continue;
      }
      iteration.records.Add(database->id, database->json, now);
    }
    if (page.has_more)
      iteration.next_pagination = Value(Value::Map{{"start_cursor", page.next_cursor}});
    return iteration;
  }

  // --- block items -------------------------------------------------------------------------

  // The configured pages, then every page of every data source of the configured databases.
  Result<std::vector<BlockItem>> ConfiguredItems() {
    std::vector<BlockItem> items;
    items.reserve(page_ids_.size());
    for (const std::string& page_id : page_ids_) {
      items.push_back({page_id, std::nullopt, page_id, page_id});
    }
    for (const std::string& database_id : database_ids_) {
      auto database = GetDatabase(database_id);
      if (!database) {
        spdlog::error("Failed to fetch database {}: {}", database_id, database.error().message());
        continue;
      }
      for (const ListedObject& source : database->data_sources) {
        auto pages = QueryAll(source.id, FilterFor(database_id));
        if (!pages) {
          spdlog::error("Failed to query data source {}: {}", source.id, pages.error().message());
          continue;
        }
        for (const ListedObject& page : *pages) {
          items.push_back({page.id, database_id, std::nullopt, page.id});
        }
      }
    }
    return items;
  }

  // Every page the search finds, then each data source's database and its pages.
  Result<std::vector<BlockItem>> WorkspaceItems() {
    std::vector<BlockItem> items;
    std::set<std::string> seen;
    std::vector<ListedObject> sources;
    std::string cursor;
    while (true) {
      BIZON_ASSIGN_OR_RETURN(ListPage page, Search(cursor, false));
      for (ListedObject& item : page.results) {
        if (item.object == "page" && seen.insert(item.id).second) {
          items.push_back({item.id, std::nullopt, std::nullopt, item.id});
        } else if (item.object == "data_source") {
          sources.push_back(std::move(item));
        }
      }
      if (!page.has_more) break;
      cursor = page.next_cursor;
    }
    for (const ListedObject& source : sources) {
      OptionalId database_id;
      if (!source.parent_database_id.empty()) database_id = source.parent_database_id;
      if (database_id && seen.insert(*database_id).second) {
        items.push_back({*database_id, database_id, std::nullopt, std::nullopt});
      }
      auto pages = QueryAll(source.id, nullptr);
      if (!pages) {
        spdlog::error("Failed to query data source {}: {}", source.id, pages.error().message());
        continue;
      }
      for (const ListedObject& page : *pages) {
        if (seen.insert(page.id).second)
          items.push_back({page.id, database_id, std::nullopt, page.id});
      }
    }
    return items;
  }

  // Incremental blocks: the pages the filtered search finds, to exhaustion.
  Result<std::vector<BlockItem>> EditedPageItems() {
    std::vector<BlockItem> items;
    std::string cursor;
    while (true) {
      BIZON_ASSIGN_OR_RETURN(ListPage page, FilteredSearch(cursor, "page"));
      for (const ListedObject& item : page.results) {
        items.push_back({item.id, std::nullopt, std::nullopt, item.id});
      }
      if (!page.has_more) return items;
      cursor = page.next_cursor;
    }
  }

  // Incremental markdown: pages of the configured databases edited since (the query filters on
  // last_edited_time), then configured pages edited since.
  Result<std::vector<BlockItem>> EditedDatabaseItems() {
    std::vector<BlockItem> items;
    Value edited(Value::Map{{"timestamp", "last_edited_time"},
                            {"last_edited_time", Value(Value::Map{{"after", Value(last_)}})}});
    for (const std::string& database_id : database_ids_) {
      auto database = GetDatabase(database_id);
      if (!database) {
        spdlog::error("Failed to fetch database {}: {}", database_id, database.error().message());
        continue;
      }
      Value filter = edited;
      if (const Value* own = FilterFor(database_id); own != nullptr && !own->is_null()) {
        filter = Value(Value::Map{{"and", Value(Value::List{edited, *own})}});
      }
      for (const ListedObject& source : database->data_sources) {
        auto pages = QueryAll(source.id, &filter);
        if (!pages) {
          spdlog::error("Failed to query data source {}: {}", source.id, pages.error().message());
          continue;
        }
        for (const ListedObject& page : *pages) {
          items.push_back({page.id, database_id, std::nullopt, page.id});
        }
      }
    }
    for (const std::string& page_id : page_ids_) {
      auto page = Call("GET", fmt::format("/pages/{}", page_id));
      if (!page) {
        spdlog::error("Failed to fetch page {}: {}", page_id, page.error().message());
        continue;
      }
      auto edited_time = page->Find("last_edited_time");
      if (edited_time && *edited_time && EditedAfter(StringField(*edited_time), last_)) {
        items.push_back({page_id, std::nullopt, page_id, page_id});
      }
    }
    return items;
  }

  // --- block streams -----------------------------------------------------------------------

  Result<SourceIteration> Blocks(const Value& pagination, bool markdown, ItemCollector collect) {
    std::vector<BlockItem> items;
    if (pagination.GetBool("items_loaded")) {
      if (const Value* list = pagination.Find("items_to_process"); list && list->is_list()) {
        for (const Value& item : list->AsList()) items.push_back(BlockItem::FromValue(item));
      }
    } else {
      BIZON_ASSIGN_OR_RETURN(items, (this->*collect)());
      spdlog::info("Notion {}: {} pages and databases to read blocks from", stream_, items.size());
    }
    SourceIteration iteration;
    if (items.empty()) return iteration;
    size_t batch = std::min(items.size(), static_cast<size_t>(max_workers_));
    std::vector<std::vector<FetchedBlock>> fetched(batch);
    ParallelFor(batch, max_workers_, [&](size_t i) {
      std::atomic<int64_t> page_order{0};
      auto blocks = FetchBlocks(items[i].block_id, items[i], 0, page_order,
                                /*expand_inline=*/!markdown);
      if (!blocks) {
        spdlog::error("Failed to fetch blocks of {}: {}", items[i].block_id,
                      blocks.error().message());
        return;
      }
      fetched[i] = std::move(*blocks);
    });
    int64_t now = NowMicros();
    for (const std::vector<FetchedBlock>& blocks : fetched) {
      for (const FetchedBlock& block : blocks) {
        if (markdown) {
          iteration.records.Add(block.id, MarkdownRecord(block), now);
        } else {
          iteration.records.Add(block.id, block.json, now);
        }
      }
    }
    if (items.size() > batch) {
      Value::List rest;
      for (size_t i = batch; i < items.size(); ++i) rest.push_back(items[i].ToValue());
      iteration.next_pagination =
          Value(Value::Map{{"items_to_process", Value(std::move(rest))}, {"items_loaded", true}});
    }
    return iteration;
  }

  static std::string MarkdownRecord(const FetchedBlock& block) {
    std::string markdown;
    if (auto parsed = Value::FromJson(block.json)) markdown = NotionBlockToMarkdown(*parsed);
    std::string out = "{";
    auto field = [&](std::string_view key, const Value& value) {
      if (out.size() > 1) out.push_back(',');
      AppendJsonString(out, key);
      out.push_back(':');
      value.AppendJson(out);
    };
    field("block_id", Value(block.id));
    field("block_type", Value(block.type));
    field("markdown", Value(markdown));
    field("source_page_id", IdValue(block.source_page_id));
    field("parent_block_id", Value(block.parent_block_id));
    field("parent_input_database_id", IdValue(block.input_db_id));
    field("parent_input_page_id", IdValue(block.input_page_id));
    field("depth", Value(block.depth));
    field("block_order", Value(block.block_order));
    field("page_order", Value(block.page_order));
    out += ",\"block_raw\":";
    out += block.json;  // Embedded as it came, enriched.
    out.push_back('}');
    return out;
  }

  // The children of `block_id`, depth first, each followed by its own children (and, for an
  // inline database when allowed, the blocks of its pages).
  Result<std::vector<FetchedBlock>> FetchBlocks(const std::string& block_id,
                                                const BlockItem& lineage, int64_t depth,
                                                std::atomic<int64_t>& page_order,
                                                bool expand_inline) {
    std::vector<FetchedBlock> out;
    if (depth >= max_depth_) {
      spdlog::warn("Max recursion depth {} reached at block {}", max_depth_, block_id);
      return out;
    }
    // List every child first: the recursion below parses other pages on this thread.
    std::vector<ListedObject> children;
    std::string cursor;
    while (true) {
      QueryParams query = {{"page_size", std::to_string(page_size_)}};
      if (!cursor.empty()) query.emplace_back("start_cursor", cursor);
      BIZON_ASSIGN_OR_RETURN(JsonPage page,
                             Call("GET", fmt::format("/blocks/{}/children", block_id), query));
      BIZON_ASSIGN_OR_RETURN(ListPage list, ReadList(page));
      for (ListedObject& child : list.results) children.push_back(std::move(child));
      if (!list.has_more) break;
      cursor = list.next_cursor;
    }
    int64_t block_order = 0;
    for (const ListedObject& child : children) {
      FetchedBlock block{.id = child.id,
                         .type = child.type,
                         .parent_block_id = block_id,
                         .input_db_id = lineage.input_db_id,
                         .input_page_id = lineage.input_page_id,
                         .source_page_id = lineage.source_page_id,
                         .depth = depth,
                         .block_order = block_order++,
                         .page_order = page_order++};
      block.json =
          WithFields(child.json, {{"parent_block_id", Value(block_id)},
                                  {"parent_input_database_id", IdValue(lineage.input_db_id)},
                                  {"parent_input_page_id", IdValue(lineage.input_page_id)},
                                  {"source_page_id", IdValue(lineage.source_page_id)},
                                  {"depth", Value(depth)},
                                  {"block_order", Value(block.block_order)},
                                  {"page_order", Value(block.page_order)}});
      out.push_back(std::move(block));

      if (child.type == "child_database" && recursive_ && expand_inline) {
        auto inline_blocks = InlineDatabaseBlocks(child.id, lineage, depth + 1, page_order);
        if (!inline_blocks) {
          spdlog::error("Failed to read inline database {}: {}", child.id,
                        inline_blocks.error().message());
          continue;
        }
        for (FetchedBlock& inner : *inline_blocks) out.push_back(std::move(inner));
      } else if (child.has_children && recursive_ && child.type != "child_page" &&
                 child.type != "child_database") {
        auto nested = FetchBlocks(child.id, lineage, depth + 1, page_order, expand_inline);
        if (!nested) {
          if (child.type == "synced_block") {
            spdlog::warn("Skipping the children of synced block {}: {}", child.id,
                         nested.error().message());
          } else {
            spdlog::error("Failed to fetch the children of block {}: {}", child.id,
                          nested.error().message());
          }
          continue;
        }
        for (FetchedBlock& inner : *nested) out.push_back(std::move(inner));
      }
    }
    return out;
  }

  // The blocks of every page of an inline database, its pages read in parallel.
  Result<std::vector<FetchedBlock>> InlineDatabaseBlocks(const std::string& database_id,
                                                         const BlockItem& lineage, int64_t depth,
                                                         std::atomic<int64_t>& page_order) {
    BIZON_ASSIGN_OR_RETURN(DatabaseInfo database, GetDatabase(database_id));
    std::vector<std::string> page_ids;
    for (const ListedObject& source : database.data_sources) {
      BIZON_ASSIGN_OR_RETURN(std::vector<ListedObject> pages, QueryAll(source.id, nullptr));
      for (const ListedObject& page : pages) page_ids.push_back(page.id);
    }
    std::vector<std::vector<FetchedBlock>> per_page(page_ids.size());
    ParallelFor(page_ids.size(), max_workers_, [&](size_t i) {
      BlockItem inner = lineage;
      inner.source_page_id = page_ids[i];
      auto blocks = FetchBlocks(page_ids[i], inner, depth, page_order, /*expand_inline=*/true);
      if (!blocks) {
        spdlog::error("Failed to fetch blocks of inline page {}: {}", page_ids[i],
                      blocks.error().message());
        return;
      }
      per_page[i] = std::move(*blocks);
    });
    std::vector<FetchedBlock> out;
    for (std::vector<FetchedBlock>& blocks : per_page) {
      for (FetchedBlock& block : blocks) out.push_back(std::move(block));
    }
    return out;
  }

  std::string stream_;
  std::string base_url_;
  bool recursive_;
  int64_t max_depth_;
  int64_t page_size_;
  int64_t max_workers_;
  std::vector<std::string> database_ids_;
  std::vector<std::string> page_ids_;
  Value database_filters_;  // A map: filter per database id.
  std::shared_ptr<HttpSession> session_;
  std::string last_;  // last_run as the original renders it, during GetRecordsAfter.
};

/// The notion source's own keys under `source:`, declared once: the registry's spec and the
/// reader both use it.
std::vector<FieldSpec> NotionFields() {
  return {
      Option::List("database_ids", Option::String("database_id"),
                   "Databases to read, for the database, data source, page and block streams.")
          .Default(Value::EmptyList()),
      Option::List("page_ids", Option::String("page_id"),
                   "Single pages to read, for the page and block streams.")
          .Default(Value::EmptyList()),
      Option::Boolean("fetch_blocks_recursively", "Descend into child blocks and inline databases.")
          .NotNull()
          .Default(true),
      Option::Integer("max_recursion_depth", "Deepest block level read below a page.")
          .NotNull()
          .Default(5)
          .Minimum(1)
          .Maximum(100),
      Option::Integer("page_size", "Results asked for in each list, query or search call.")
          .NotNull()
          .Default(100)
          .Minimum(1)
          .Maximum(100),
      Option::Integer("max_workers",
                      "Parallel requests, and items handled per iteration by the block streams.")
          .NotNull()
          .Default(3)
          .Minimum(1)
          .Maximum(10),
      Option::Map("database_filters",
                  "Notion filter object per database id, sent as is with each query of that "
                  "database.")
          .Default(Value::EmptyMap()),
      Option::String("base_url", "Root of the API; change it only to point at a test server.")
          .NotNull()
          .Default("https://api.notion.com/v1"),
      // Every endpoint needs the integration token.
      AuthenticationField({"api_key", "bearer"}, /*required=*/true),
  };
}

}  // namespace

Status RegisterNotionSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "notion",
      .description = "Notion API (version 2025-09-03): pages, databases, data sources, blocks "
                     "(raw or as markdown) and users.",
      // Every stream accepts an incremental run, as in the original: users, data_sources and
      // all_data_sources then read everything again, with a warning.
      .streams =
          {
              {"databases", true, "The configured databases, one object each."},
              {"data_sources", true,
               "Data sources of the configured databases (incremental reads them in full)."},
              {"pages", true, "Pages of the configured databases, then the configured pages."},
              {"blocks", true, "Every block of the configured pages and database pages."},
              {"blocks_markdown", true, "The same blocks, each rendered as a markdown line."},
              {"users", true,
               "Members and bots of the workspace (incremental reads them in full)."},
              {"all_pages", true, "Every page the integration can see."},
              {"all_databases", true, "Every database the integration can see."},
              {"all_data_sources", true,
               "Every data source the integration can see (incremental reads them in full)."},
              {"all_blocks_markdown", true,
               "Blocks of every visible page and database, rendered as markdown."},
          },
      .config =
          {
              .fields = NotionFields(),
              .unknown_keys = UnknownKeys::kWarn,
          },
      .factory = [](const SourceContext& context) -> Result<std::unique_ptr<Source>> {
        if (const Value* http = context.config.Find("http"); http != nullptr && !http->is_null()) {
          spdlog::warn(
              "source.http has no effect: the notion source uses a session of its own "
              "(10 retries on 429 and 5xx, Retry-After honoured)");
        }
        BIZON_ASSIGN_OR_RETURN(
            std::shared_ptr<HttpSession> session,
            MakeSourceSession(context.config,
                              {.auth = {.allowed_types = {"api_key", "bearer"}},
                               .default_headers = {{"Notion-Version", std::string(kNotionVersion)},
                                                   {"Content-Type", "application/json"}},
                               .policy = NotionPolicy()}));
        OptionReader options(Option::Object("source", NotionFields()), context.config);
        auto source = std::make_unique<NotionSource>(context.stream, options, std::move(session));
        BIZON_RETURN_IF_ERROR(options.status());
        return source;
      },
  });
}

}  // namespace bizon
