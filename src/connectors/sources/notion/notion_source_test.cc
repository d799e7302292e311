// The notion source built from pipeline YAML against a loopback server speaking Notion's API
// version 2025-09-03: every request carries the bearer token, `Notion-Version: 2025-09-03` and a
// JSON content type; lists page with `start_cursor` (a query parameter on GETs, a body field on
// POSTs); databases are read for their data sources, which are queried with
// `POST /v1/data_sources/{id}/query`. Also: retries on 429 and 5xx, the calls that are skipped on
// failure and those that fail the run, and the token never in an error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bizon/clock.h"
#include "bizon/registry.h"
#include "connectors/registration.h"
#include "testing/loopback_http_server.h"
#include "testing/pipeline_source.h"

namespace bizon {
namespace {

using testing_support::GetLoopResult;
using testing_support::LoopbackRequest;
using testing_support::LoopbackResponse;

constexpr std::string_view kToken = "notion-integration-secret-5f1c";

// A Notion list answer.
std::string List(const std::string& results, const std::string& next_cursor = "") {
  return R"({"object": "list", "results": [)" + results + R"(], "next_cursor": )" +
         (next_cursor.empty() ? std::string("null") : "\"" + next_cursor + "\"") +
         R"(, "has_more": )" + (next_cursor.empty() ? "false" : "true") + "}";
}

std::string Page(const std::string& id, const std::string& edited = "2024-03-01T09:00:00.000Z") {
  return R"({"object": "page", "id": ")" + id + R"(", "last_edited_time": ")" + edited + R"("})";
}

std::string Block(const std::string& id, const std::string& type, bool has_children) {
  return R"({"object": "block", "id": ")" + id + R"(", "type": ")" + type +
         R"(", "has_children": )" + (has_children ? "true" : "false") + "}";
}

Value Body(const LoopbackRequest& request) {
  auto parsed = Value::FromJson(request.body);
  EXPECT_TRUE(parsed.has_value()) << request.body;
  return parsed ? *parsed : Value();
}

class NotionSourceTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinConnectors(registry_).ok()); }

  // A notion source reading `stream`, with `options` (more keys of the source block, indented by
  // two spaces), two results per call and one worker.
  std::unique_ptr<Source> Make(const std::string& stream, const std::string& options = "") {
    auto made = testing_support::MakeSourceFromYaml(
        registry_, "  name: notion\n  stream: " + stream + "\n  base_url: " + server_.url() +
                       "/v1\n  authentication: {type: bearer, params: {token: " +
                       std::string(kToken) + "}}\n  page_size: 2\n  max_workers: 1\n" + options);
    EXPECT_TRUE(made.has_value()) << made.error().ToString();
    return made ? std::move(*made) : nullptr;
  }

  // `stream` read with Get() to the end.
  GetLoopResult Read(const std::string& stream, const std::string& options = "") {
    std::unique_ptr<Source> source = Make(stream, options);
    if (source == nullptr) return {.error = InternalError("no source")};
    return testing_support::ReadToEnd(*source);
  }

  // Every request was Notion's: bearer token, API version, JSON.
  void ExpectNotionHeaders() {
    for (const LoopbackRequest& request : server_.requests()) {
      EXPECT_EQ(request.Header("authorization"), "Bearer " + std::string(kToken)) << request.target;
      EXPECT_EQ(request.Header("notion-version"), "2025-09-03") << request.target;
      EXPECT_EQ(request.Header("content-type"), "application/json") << request.target;
    }
  }

  ConnectorRegistry registry_;
  testing_support::LoopbackHttpServer server_;
};

TEST_F(NotionSourceTest, UsersPageWithStartCursor) {
  server_.ExpectJson(
      "GET", "/v1/users",
      List(R"({"object": "user", "id": "user-1"}, {"object": "user", "id": "user-2"})",
           "cursor-users-3"));
  server_.ExpectJson("GET", "/v1/users", List(R"({"object": "user", "id": "user-3"})"));
  GetLoopResult loop = Read("users");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(2));
  EXPECT_EQ(loop.ids(), (std::vector<std::string>{"user-1", "user-2", "user-3"}));
  EXPECT_EQ(loop.payloads()[2], R"({"object": "user", "id": "user-3"})");
  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].QueryParameters(), (QueryParams{{"page_size", "2"}}));
  EXPECT_EQ(requests[1].QueryParameters(),
            (QueryParams{{"page_size", "2"}, {"start_cursor", "cursor-users-3"}}));
  ExpectNotionHeaders();
}

TEST_F(NotionSourceTest, PagesQueryEachDataSourceThenTheConfiguredPages) {
  server_.ExpectJson("GET", "/v1/databases/db-1", R"({"object": "database", "id": "db-1",
      "title": [{"plain_text": "Tasks"}],
      "data_sources": [{"id": "ds-1", "name": "Tasks"}, {"id": "ds-2", "name": "Archive"}]})");
  server_.ExpectJson("POST", "/v1/data_sources/ds-1/query",
                     List(Page("page-1") + "," + Page("page-2"), "cursor-ds-1"));
  server_.ExpectJson("POST", "/v1/data_sources/ds-1/query", List(Page("page-3")));
  server_.ExpectJson("POST", "/v1/data_sources/ds-2/query", List(Page("page-4")));
  server_.ExpectJson("GET", "/v1/pages/page-9", Page("page-9"));
  GetLoopResult loop =
      Read("pages",
           "  database_ids: [db-1]\n  page_ids: [page-9]\n"
           "  database_filters: {db-1: {property: Status, select: {equals: Done}}}\n");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(2));
  EXPECT_EQ(loop.ids(),
            (std::vector<std::string>{"page-1", "page-2", "page-3", "page-4", "page-9"}));

  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 5u);
  Value filter = Value::FromJson(R"({"property": "Status", "select": {"equals": "Done"}})").value();
  for (size_t i : {1, 2, 3}) {
    Value body = Body(requests[i]);
    EXPECT_EQ(body.GetInteger("page_size"), 2) << i;
    ASSERT_NE(body.Find("filter"), nullptr) << i;
    EXPECT_EQ(*body.Find("filter"), filter) << i;
  }
  EXPECT_EQ(Body(requests[1]).Find("start_cursor"), nullptr);
  EXPECT_EQ(Body(requests[2]).GetString("start_cursor"), "cursor-ds-1");
  EXPECT_EQ(Body(requests[3]).Find("start_cursor"), nullptr);
  ExpectNotionHeaders();
}

TEST_F(NotionSourceTest, DataSourcesCarryTheirDatabase) {
  server_.ExpectJson("GET", "/v1/databases/db-1", R"({"object": "database", "id": "db-1",
      "title": [{"plain_text": "Ta"}, {"plain_text": "sks"}],
      "data_sources": [{"id": "ds-1", "name": "Tasks"}]})");
  GetLoopResult loop = Read("data_sources", "  database_ids: [db-1]\n");
  ASSERT_TRUE(loop.error.ok()) << loop.error.ToString();
  ASSERT_EQ(loop.records(), 1u);
  Value record = Value::FromJson(loop.payloads()[0]).value();
  EXPECT_EQ(record.GetString("id"), "ds-1");
  EXPECT_EQ(record.GetString("parent_database_id"), "db-1");
  EXPECT_EQ(record.GetString("parent_database_title"), "Tasks");
}

TEST_F(NotionSourceTest, AllPagesSearchKeepsOnlyPages) {
  server_.ExpectJson(
      "POST", "/v1/search",
      List(Page("page-1") + R"(, {"object": "data_source", "id": "ds-1"}, )" + Page("page-2"),
           "cursor-search-2"));
  server_.ExpectJson("POST", "/v1/search", List(Page("page-3")));
  GetLoopResult loop = Read("all_pages");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(2));
  EXPECT_EQ(loop.ids(), (std::vector<std::string>{"page-1", "page-2", "page-3"}));
  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(Body(requests[0]).Find("start_cursor"), nullptr);
  EXPECT_EQ(Body(requests[1]).GetString("start_cursor"), "cursor-search-2");
  EXPECT_EQ(Body(requests[1]).GetInteger("page_size"), 2);
  ExpectNotionHeaders();
}

TEST_F(NotionSourceTest, BlocksDepthFirstWithTheirLineage) {
  server_.ExpectJson(
      "GET", "/v1/blocks/page-1/children",
      List(Block("block-1", "paragraph", true) + "," + Block("block-2", "child_page", true),
           "cursor-blocks"));
  server_.ExpectJson("GET", "/v1/blocks/page-1/children", List(Block("block-3", "to_do", false)));
  server_.ExpectJson("GET", "/v1/blocks/block-1/children",
                     List(Block("block-1a", "paragraph", false)));
  GetLoopResult loop = Read("blocks", "  page_ids: [page-1]\n");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(1));
  // The children of a child page are that page's business, not read here.
  EXPECT_EQ(loop.ids(), (std::vector<std::string>{"block-1", "block-1a", "block-2", "block-3"}));
  struct Lineage {
    std::string parent;
    int64_t depth, block_order, page_order;
  };
  std::vector<Lineage> expected = {
      {"page-1", 0, 0, 0}, {"block-1", 1, 0, 1}, {"page-1", 0, 1, 2}, {"page-1", 0, 2, 3}};
  std::vector<std::string> payloads = loop.payloads();
  for (size_t i = 0; i < expected.size(); ++i) {
    Value block = Value::FromJson(payloads[i]).value();
    EXPECT_EQ(block.GetString("parent_block_id"), expected[i].parent) << i;
    EXPECT_EQ(block.GetInteger("depth", -1), expected[i].depth) << i;
    EXPECT_EQ(block.GetInteger("block_order", -1), expected[i].block_order) << i;
    EXPECT_EQ(block.GetInteger("page_order", -1), expected[i].page_order) << i;
    EXPECT_EQ(block.GetString("source_page_id"), "page-1") << i;
    EXPECT_EQ(block.GetString("parent_input_page_id"), "page-1") << i;
    ASSERT_NE(block.Find("parent_input_database_id"), nullptr) << i;
    EXPECT_TRUE(block.Find("parent_input_database_id")->is_null()) << i;
  }
  std::vector<LoopbackRequest> requests = server_.requests();
  EXPECT_EQ(requests[1].QueryParameters(),
            (QueryParams{{"page_size", "2"}, {"start_cursor", "cursor-blocks"}}));
  ExpectNotionHeaders();
}

TEST_F(NotionSourceTest, IncrementalPagesStopAtTheFirstOneNotEditedSince) {
  server_.ExpectJson("POST", "/v1/search",
                     List(Page("page-new", "2024-03-02T10:00:00.000Z") +
                              R"(, {"object": "data_source", "id": "ds-1",
                                  "last_edited_time": "2024-03-02T09:00:00.000Z"}, )" +
                              Page("page-old", "2024-02-01T10:00:00.000Z"),
                          "cursor-older"));
  auto source = Make("pages", "  sync_mode: incremental\n");
  ASSERT_NE(source, nullptr);
  auto last_run = ParseTimestamp("2024-03-01T09:00:00Z");
  ASSERT_TRUE(last_run.has_value());
  IncrementalState state{.last_run_us = *last_run, .run_started_at_us = NowMicros()};
  auto page = source->GetRecordsAfter(state, Value::EmptyMap());
  ASSERT_TRUE(page.has_value()) << page.error().ToString();
  EXPECT_TRUE(page->IsLast());
  ASSERT_EQ(page->records.size(), 1u);
  EXPECT_EQ(page->records.id(0), "page-new");
  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 1u);
  Value body = Body(requests[0]);
  ASSERT_NE(body.Find("sort"), nullptr);
  EXPECT_EQ(body.Find("sort")->GetString("timestamp"), "last_edited_time");
  EXPECT_EQ(body.Find("sort")->GetString("direction"), "descending");
}

TEST_F(NotionSourceTest, RateLimitsAndServerErrorsAreRetried) {
  // Retry-After 0 falls back to the backoff, which is none before the first retry.
  server_.Expect(
      "GET", "/v1/users",
      LoopbackResponse::Json(R"({"object": "error", "status": 429, "code": "rate_limited"})", 429,
                             {{"Retry-After", "0"}}));
  server_.ExpectJson("GET", "/v1/users", List(R"({"object": "user", "id": "user-1"})", "cursor-2"));
  server_.Expect("GET", "/v1/users", {.status = 502, .body = "bad gateway"});
  server_.ExpectJson("GET", "/v1/users", List(R"({"object": "user", "id": "user-2"})"));
  GetLoopResult loop = Read("users");
  ASSERT_TRUE(loop.error.ok()) << loop.error.ToString();
  EXPECT_EQ(loop.ids(), (std::vector<std::string>{"user-1", "user-2"}));
  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].target, requests[1].target);
  EXPECT_EQ(requests[2].target, requests[3].target);
  EXPECT_EQ(requests[3].QueryValue("start_cursor"), "cursor-2");
}

TEST_F(NotionSourceTest, AFailedUsersCallFailsTheRunNamingItButNotTheToken) {
  const std::string answer =
      R"({"object": "error", "status": 400, "code": "validation_error", "message": "bad size"})";
  server_.Expect("GET", "/v1/users", LoopbackResponse::Json(answer, 400));
  GetLoopResult loop = Read("users");
  ASSERT_FALSE(loop.error.ok());
  EXPECT_EQ(loop.error.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(loop.error.failure_class(), FailureClass::kSource);
  EXPECT_EQ(loop.error.message(), "HTTP request failed: GET " + server_.url() +
                                      "/v1/users?page_size=2 returned 400 Bad Request: " + answer);
  EXPECT_EQ(loop.error.message().find(kToken), std::string::npos);
}

TEST_F(NotionSourceTest, AnUnreadableDatabaseIsSkipped) {
  server_.Expect("GET", "/v1/databases/db-1",
                 LoopbackResponse::Json(R"({"object": "error", "status": 404,
                     "code": "object_not_found"})",
                                        404));
  server_.ExpectJson("GET", "/v1/databases/db-2",
                     R"({"object": "database", "id": "db-2", "title": [], "data_sources": []})");
  GetLoopResult loop = Read("databases", "  database_ids: [db-1, db-2]\n");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(2));
  EXPECT_EQ(loop.iterations[0].records.size(), 0u);
  EXPECT_EQ(loop.ids(), std::vector<std::string>{"db-2"});
}

TEST_F(NotionSourceTest, TheConnectionCheckAsksForOneUser) {
  server_.ExpectJson("GET", "/v1/users", List(R"({"object": "user", "id": "user-1"})"));
  auto source = Make("pages");
  ASSERT_NE(source, nullptr);
  EXPECT_TRUE(source->CheckConnection().ok());
  EXPECT_EQ(server_.requests()[0].QueryParameters(), (QueryParams{{"page_size", "1"}}));
  ExpectNotionHeaders();
}

}  // namespace
}  // namespace bizon
