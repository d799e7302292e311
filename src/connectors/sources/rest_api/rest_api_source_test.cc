// The rest_api source built from pipeline YAML, as a run builds it, against a loopback server:
// each pagination kind of its README read to the end (the requests checked against what the kind
// sends), retries on 429 and 5xx with Retry-After under a tiny configured policy, incremental
// windows, and the errors: what failed, where, and never a credential.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "bizon/registry.h"
#include "bizon/secret_mask.h"
#include "connectors/registration.h"
#include "testing/loopback_http_server.h"
#include "testing/pipeline_source.h"

namespace bizon {
namespace {

using testing_support::GetLoopResult;
using testing_support::LoopbackRequest;
using testing_support::LoopbackResponse;

// `count` users {"id": first, ...}, as JSON array items.
std::string Users(int first, int count) {
  std::string out;
  for (int id = first; id < first + count; ++id) {
    if (!out.empty()) out += ",";
    out += R"({"id":)" + std::to_string(id) + R"(,"name":"user )" + std::to_string(id) + R"("})";
  }
  return out;
}

std::vector<std::string> Ids(int first, int count) {
  std::vector<std::string> ids;
  for (int id = first; id < first + count; ++id) ids.push_back(std::to_string(id));
  return ids;
}

class RestApiSourceTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinConnectors(registry_).ok()); }

  // A rest_api source on the `users` endpoint; `endpoint` holds its keys, indented by 6 spaces,
  // and `source` more keys of the source block, indented by 2.
  Result<std::unique_ptr<Source>> Make(const std::string& endpoint,
                                       const std::string& source = "") {
    return testing_support::MakeSourceFromYaml(
        registry_, "  name: rest_api\n  stream: users\n  base_url: " + server_.url() + "/v1\n" +
                       source + "  endpoints:\n    users:\n" + endpoint);
  }

  std::unique_ptr<Source> MakeOrFail(const std::string& endpoint, const std::string& source = "") {
    auto made = Make(endpoint, source);
    EXPECT_TRUE(made.has_value()) << made.error().ToString();
    return made ? std::move(*made) : nullptr;
  }

  // The source read with Get() to the end; a source that cannot be built gives its error.
  GetLoopResult Read(const std::string& endpoint, const std::string& source = "") {
    auto made = Make(endpoint, source);
    if (!made) return {.error = made.error()};
    return testing_support::ReadToEnd(**made);
  }

  ConnectorRegistry registry_;
  testing_support::LoopbackHttpServer server_;
};

TEST_F(RestApiSourceTest, OffsetPagesUntilAShortPage) {
  for (auto [first, count] : std::vector<std::pair<int, int>>{{1, 2}, {3, 2}, {5, 1}}) {
    server_.ExpectJson("GET", "/v1/users", R"({"data": {"items": [)" + Users(first, count) + "]}}");
  }
  GetLoopResult loop = Read(R"(      path: /users
      record_selector: data.items
      params: {team: data}
      headers: {X-Endpoint: users}
      pagination: {type: offset, limit: 2}
)",
                            "  headers: {Accept: application/json}\n  params: {region: eu}\n");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(3));
  EXPECT_EQ(loop.ids(), Ids(1, 5));
  // Each record is the API's bytes.
  EXPECT_EQ(loop.payloads()[0], R"({"id":1,"name":"user 1"})");

  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 3u);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(requests[i].QueryParameters(), (QueryParams{{"region", "eu"},
                                                          {"team", "data"},
                                                          {"offset", std::to_string(2 * i)},
                                                          {"limit", "2"}}));
    EXPECT_EQ(requests[i].Header("accept"), "application/json");
    EXPECT_EQ(requests[i].Header("x-endpoint"), "users");
  }
}

TEST_F(RestApiSourceTest, OffsetFollowsTheRecordsReceivedUpToTheTotal) {
  // The API caps the page at 2 records although 3 were asked for.
  server_.ExpectJson("GET", "/v1/users", R"({"items": [)" + Users(1, 2) + R"(], "total": 5})");
  server_.ExpectJson("GET", "/v1/users", R"({"items": [)" + Users(3, 2) + R"(], "total": 5})");
  server_.ExpectJson("GET", "/v1/users", R"({"items": [)" + Users(5, 1) + R"(], "total": 5})");
  GetLoopResult loop = Read(R"(      path: users
      record_selector: items
      pagination: {type: offset, offset_param: skip, limit_param: take, limit: 3, total_path: total}
)");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(3));
  EXPECT_EQ(loop.ids(), Ids(1, 5));
  std::vector<std::string> skips;
  for (const LoopbackRequest& request : server_.requests()) {
    skips.push_back(request.QueryValue("skip").value_or("-"));
    EXPECT_EQ(request.QueryValue("take"), "3");
  }
  EXPECT_EQ(skips, (std::vector<std::string>{"0", "2", "4"}));
}

TEST_F(RestApiSourceTest, PageNumbersUntilHasMoreIsFalse) {
  server_.ExpectJson("GET", "/v1/users", R"({"users": [)" + Users(1, 2) + R"(], "more": true})");
  server_.ExpectJson("GET", "/v1/users", R"({"users": [)" + Users(3, 2) + R"(], "more": false})");
  GetLoopResult loop = Read(R"(      path: /users
      record_selector: users
      pagination: {type: page_number, page_param: p, start_page: 0, page_size_param: per_page,
                   page_size: 2, has_more_path: more}
)");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(2));
  EXPECT_EQ(loop.ids(), Ids(1, 4));
  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].QueryParameters(), (QueryParams{{"p", "0"}, {"per_page", "2"}}));
  EXPECT_EQ(requests[1].QueryParameters(), (QueryParams{{"p", "1"}, {"per_page", "2"}}));
}

TEST_F(RestApiSourceTest, PageNumbersStopAtAnEmptyPage) {
  server_.ExpectJson("GET", "/v1/users", "[" + Users(1, 2) + "]");
  server_.ExpectJson("GET", "/v1/users", "[]");
  GetLoopResult loop = Read("      path: /users\n      pagination: {type: page_number}\n");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(2));
  EXPECT_EQ(loop.records(), 2u);
  EXPECT_EQ(server_.requests()[1].QueryValue("page"), "2");
}

TEST_F(RestApiSourceTest, CursorInTheQueryUntilItIsNull) {
  server_.ExpectJson("GET", "/v1/users",
                     R"({"results": [)" + Users(1, 2) + R"(], "meta": {"next": "c/2=+"}})");
  server_.ExpectJson("GET", "/v1/users",
                     R"({"results": [)" + Users(3, 1) + R"(], "meta": {"next": null}})");
  GetLoopResult loop = Read(R"(      path: /users
      record_selector: results
      pagination: {type: cursor, cursor_param: starting_after, cursor_path: meta.next}
)");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(2));
  EXPECT_EQ(loop.ids(), Ids(1, 3));
  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].query, "");
  // The cursor goes back exactly as the API wrote it.
  EXPECT_EQ(requests[1].QueryParameters(), (QueryParams{{"starting_after", "c/2=+"}}));
}

TEST_F(RestApiSourceTest, CursorInThePostBodyUntilHasMoreIsFalse) {
  server_.ExpectJson(
      "POST", "/v1/users/search",
      R"({"results": [)" + Users(1, 2) + R"(], "has_more": true, "next_cursor": "cur-2"})");
  server_.ExpectJson(
      "POST", "/v1/users/search",
      R"({"results": [)" + Users(3, 2) + R"(], "has_more": false, "next_cursor": "cur-3"})");
  GetLoopResult loop = Read(R"(      path: /users/search
      method: POST
      body: {filter: {status: open}, page_size: 2}
      record_selector: results
      pagination: {type: cursor, cursor_param: start_cursor, location: body, has_more_path: has_more}
)");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(2));
  EXPECT_EQ(loop.ids(), Ids(1, 4));
  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(Value::FromJson(requests[0].body).value(),
            Value::FromJson(R"({"filter": {"status": "open"}, "page_size": 2})").value());
  EXPECT_EQ(
      Value::FromJson(requests[1].body).value(),
      Value::FromJson(R"({"filter": {"status": "open"}, "page_size": 2, "start_cursor": "cur-2"})")
          .value());
  for (const LoopbackRequest& request : requests) {
    EXPECT_EQ(request.Header("content-type"), "application/json");
    EXPECT_EQ(request.query, "");
  }
}

TEST_F(RestApiSourceTest, NextUrlsRelativeOrAbsoluteUntilNone) {
  server_.ExpectJson(
      "GET", "/v1/users",
      R"({"data": [)" + Users(1, 2) + R"(], "links": {"next": "/v1/users?page=2"}})");
  server_.ExpectJson("GET", "/v1/users",
                     R"({"data": [)" + Users(3, 2) + R"(], "links": {"next": ")" + server_.url() +
                         R"(/v1/users?page=3"}})");
  server_.ExpectJson("GET", "/v1/users", R"({"data": [)" + Users(5, 1) + R"(], "links": {}})");
  GetLoopResult loop = Read(R"(      path: /users
      params: {per_page: 2}
      record_selector: data
      pagination: {type: next_url, next_url_path: links.next}
)");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(3));
  EXPECT_EQ(loop.ids(), Ids(1, 5));
  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].query, "per_page=2");
  // The next URL carries every query parameter itself.
  EXPECT_EQ(requests[1].query, "page=2");
  EXPECT_EQ(requests[2].query, "page=3");
}

TEST_F(RestApiSourceTest, LinkHeadersUntilNoNextLink) {
  server_.Expect("GET", "/v1/users",
                 LoopbackResponse::Json(
                     "[" + Users(1, 2) + "]", 200,
                     {{"Link", "<" + server_.url() + R"(/v1/users?after=2>; rel="next", <)" +
                                   server_.url() + R"(/v1/users>; rel="first")"}}));
  server_.Expect("GET", "/v1/users",
                 LoopbackResponse::Json("[" + Users(3, 1) + "]", 200,
                                        {{"Link", R"(</v1/users>; rel="prev")"}}));
  GetLoopResult loop = Read("      path: /users\n      pagination: {type: link_header}\n");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(2));
  EXPECT_EQ(loop.ids(), Ids(1, 3));
  EXPECT_EQ(server_.requests()[1].query, "after=2");
}

TEST_F(RestApiSourceTest, WithoutPaginationOnePageWithNestedIds) {
  server_.ExpectJson(
      "GET", "/v1/users",
      R"([{"meta": {"uid": "u-1"}}, {"meta": {"uid": 42}}, {"meta": {"uid": "u-3"}}])");
  GetLoopResult loop = Read("      path: /users\n      record_id: meta.uid\n");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(1));
  EXPECT_EQ(loop.ids(), (std::vector<std::string>{"u-1", "42", "u-3"}));
}

TEST_F(RestApiSourceTest, RetriesRateLimitsAndServerErrorsWithRetryAfter) {
  server_.Expect(
      "GET", "/v1/users",
      LoopbackResponse::Json(R"({"error": "rate limited"})", 429, {{"Retry-After", "30"}}));
  server_.Expect("GET", "/v1/users", {.status = 503, .headers = {{"Retry-After", "5"}}});
  server_.Expect("GET", "/v1/users", {.status = 502, .body = "bad gateway"});
  server_.ExpectJson("GET", "/v1/users", "[" + Users(1, 2) + "]");
  // Retry-After is capped at 10 ms and the backoff is a millisecond: the test does not wait.
  auto started = std::chrono::steady_clock::now();
  GetLoopResult loop = Read("      path: /users\n",
                            "  http: {retries: {total: 3, backoff_factor: 0.001, "
                            "retry_after_max: 0.01}}\n");
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(1));
  EXPECT_EQ(loop.ids(), Ids(1, 2));
  EXPECT_EQ(server_.requests().size(), 4u);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

TEST_F(RestApiSourceTest, GivesUpNamingTheRequestAndTheLastAnswer) {
  server_.Expect("GET", "/v1/users", {.status = 500, .body = "boom"});
  server_.Expect("GET", "/v1/users", {.status = 500, .body = "still boom"});
  GetLoopResult loop = Read("      path: /users\n      pagination: {type: offset, limit: 2}\n",
                            "  http: {retries: {total: 1, backoff_factor: 0.001}}\n");
  ASSERT_FALSE(loop.error.ok());
  EXPECT_TRUE(loop.iterations.empty());
  EXPECT_EQ(loop.error.code(), StatusCode::kUnavailable);
  EXPECT_EQ(loop.error.failure_class(), FailureClass::kSource);
  EXPECT_EQ(loop.error.message(),
            "HTTP request failed after 2 attempts: GET " + server_.url() +
                "/v1/users?offset=0&limit=2 returned 500 Internal Server Error: still boom");
}

TEST_F(RestApiSourceTest, TheTokenGoesOutButNeverIntoAnError) {
  server_.Expect("GET", "/v1/users",
                 LoopbackResponse::Json(R"({"message": "token expired"})", 401));
  GetLoopResult loop =
      Read("      path: /users\n",
           "  authentication: {type: bearer, params: {token: rest-api-tok-4a0e}}\n");
  ASSERT_FALSE(loop.error.ok());
  EXPECT_EQ(server_.requests()[0].Header("authorization"), "Bearer rest-api-tok-4a0e");
  EXPECT_EQ(loop.error.message(),
            "HTTP request failed: GET " + server_.url() +
                R"(/v1/users returned 401 Unauthorized: {"message": "token expired"})");
  EXPECT_EQ(loop.error.message().find("rest-api-tok-4a0e"), std::string::npos);
}

// A key written into the YAML as a query parameter or a header (no authentication block) goes
// out, and is masked wherever the failed request's URL is printed: logs, errors, result files.
TEST_F(RestApiSourceTest, AKeyGivenAsAParamOrHeaderIsMaskedWhereTheUrlIsPrinted) {
  server_.Expect("GET", "/v1/users", LoopbackResponse::Json(R"({"message": "bad key"})", 403));
  GetLoopResult loop = Read("      path: /users\n      headers: {X-Api-Key: hdr-key-5d21c9}\n",
                            "  params: {api_key: sk_live_7f3e9a2b, team: data-eng}\n");
  ASSERT_FALSE(loop.error.ok());
  ASSERT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(server_.requests()[0].Header("x-api-key"), "hdr-key-5d21c9");
  std::string shown = SecretMask::Global().Redact(loop.error.message());
  EXPECT_EQ(shown, "HTTP request failed: GET " + server_.url() +
                       R"(/v1/users?api_key=****&team=data-eng returned 403 Forbidden: )"
                       R"({"message": "bad key"})");
  EXPECT_EQ(SecretMask::Global().Redact("sent hdr-key-5d21c9"), "sent ****");
}

TEST_F(RestApiSourceTest, ARecordWithoutItsIdIsNamed) {
  server_.ExpectJson("GET", "/v1/users", R"({"items": [{"id": 1}, {"name": "anonymous"}]})");
  GetLoopResult loop = Read("      path: /users\n      record_selector: items\n");
  ASSERT_FALSE(loop.error.ok());
  EXPECT_EQ(loop.error.failure_class(), FailureClass::kSource);
  EXPECT_EQ(loop.error.message(), "record 1 of the response of GET " + server_.url() +
                                      "/v1/users has no 'id'; set record_id to the field that "
                                      "identifies records");
}

TEST_F(RestApiSourceTest, AnAnswerThatIsNotJsonIsNamed) {
  server_.Expect("GET", "/v1/users", {.status = 200, .body = "<html>maintenance</html>"});
  GetLoopResult loop = Read("      path: /users\n      record_selector: items\n");
  ASSERT_FALSE(loop.error.ok());
  EXPECT_EQ(loop.error.failure_class(), FailureClass::kSource);
  EXPECT_EQ(loop.error.message().rfind(
                "invalid JSON in the response of GET " + server_.url() + "/v1/users: ", 0),
            0u)
      << loop.error.message();
  EXPECT_NE(loop.error.message().find("body: <html>maintenance</html>"), std::string::npos);
}

TEST_F(RestApiSourceTest, TheTotalComesFromTheFirstPage) {
  server_.ExpectJson("GET", "/v1/users", R"({"items": [], "meta": {"total": 1234}})");
  auto source = MakeOrFail(
      "      path: /users\n      record_selector: items\n      total_path: meta.total\n");
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->TotalRecordsCount(), 1234);
}

TEST_F(RestApiSourceTest, IncrementalWindowsAndTheLargestCursor) {
  server_.ExpectJson("GET", "/v1/users",
                     R"([{"id": 1, "updated_at": 1700000100}, {"id": 2, "updated_at": 1700000900},
                         {"id": 3, "updated_at": 1700000500}])");
  server_.ExpectJson("GET", "/v1/users", R"([{"id": 4, "updated_at": 1700001000}])");
  auto source = MakeOrFail(R"(      path: /users
      incremental: {param: updated_after, end_param: updated_before, format: unix,
                    cursor_field: updated_at}
)",
                           "  sync_mode: incremental\n");
  ASSERT_NE(source, nullptr);
  // The first incremental run: the window starts at the last run.
  IncrementalState first{.last_run_us = 1'700'000'000'000'000,
                         .run_started_at_us = 1'700'000'600'000'000};
  auto page = source->GetRecordsAfter(first, Value::EmptyMap());
  ASSERT_TRUE(page.has_value()) << page.error().ToString();
  EXPECT_TRUE(page->IsLast());
  EXPECT_EQ(page->records.size(), 3u);
  ASSERT_TRUE(page->next_state.has_value());
  EXPECT_EQ(*page->next_state, Value(Value::Map{{"cursor", Value(int64_t{1700000900})}}));

  // The next run starts at the largest cursor of the previous one.
  IncrementalState second{.last_run_us = 1'700'000'600'000'000,
                          .run_started_at_us = 1'700'001'200'000'000,
                          .state = *page->next_state};
  ASSERT_TRUE(source->GetRecordsAfter(second, Value::EmptyMap()).has_value());
  std::vector<LoopbackRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].QueryParameters(),
            (QueryParams{{"updated_after", "1700000000"}, {"updated_before", "1700000600"}}));
  EXPECT_EQ(requests[1].QueryParameters(),
            (QueryParams{{"updated_after", "1700000900"}, {"updated_before", "1700001200"}}));
}

TEST_F(RestApiSourceTest, ConfigMistakesAreRefusedBeforeAnyRequest) {
  auto incremental = Make("      path: /users\n", "  sync_mode: incremental\n");
  ASSERT_FALSE(incremental.has_value());
  EXPECT_NE(incremental.error().message().find("an incremental run needs an incremental block"),
            std::string::npos)
      << incremental.error().message();
  auto unknown = testing_support::MakeSourceFromYaml(
      registry_, "  name: rest_api\n  stream: orders\n  base_url: " + server_.url() +
                     "\n  endpoints:\n    users: {path: /users}\n    teams: {path: /teams}\n");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message().find(
                "'orders' is not one of the endpoints of this rest_api source (users, teams)"),
            std::string::npos)
      << unknown.error().message();
  EXPECT_TRUE(server_.requests().empty());
}

}  // namespace
}  // namespace bizon
