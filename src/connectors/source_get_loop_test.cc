// Every registered source read with Get() to the end, built the way a run builds it (pipeline
// file, validation, settings, the registry's factory), each pagination going through its stored
// JSON form as a resume would: every record once, every iteration but the last saying there is
// more, the last marked last. The sources of HTTP APIs read a loopback server (their `base_url`
// points at it) that answers as the API documents; the requests are checked for the API's shape.
// A registered source with no case here must be listed in kNotReadHere with the reason.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bizon/registry.h"
#include "connectors/registration.h"
#include "testing/loopback_http_server.h"
#include "testing/pipeline_source.h"

namespace bizon {
namespace {

using testing_support::LoopbackHttpServer;
using testing_support::LoopbackRequest;

// Sources no case reads, and why.
const std::map<std::string, std::string> kNotReadHere = {
    {"kafka",
     "needs a Kafka broker (and a schema registry for Avro): read to the end by "
     "tests/e2e/test_kafka_source.py"},
};

struct GetLoopCase {
  /// The test's name.
  std::string name;
  /// The registered source it reads.
  std::string source;
  /// The `source:` block (keys indented by two spaces), given the loopback server's URL.
  std::function<std::string(const std::string& url)> yaml;
  /// What the API answers, in order; null for a source that reads no API.
  std::function<void(LoopbackHttpServer& server)> script;
  /// Checks the requests against the API's documented shape.
  std::function<void(const std::vector<LoopbackRequest>& requests)> check_requests;
  /// The record ids, in order; empty when they are not known up front (then only `records`).
  std::vector<std::string> ids;
  size_t records = 0;
  size_t iterations = 0;
};

// Test names in failure messages, rather than the case's bytes.
void PrintTo(const GetLoopCase& test, std::ostream* out) { *out << test.name; }

// A PEM RSA key for a service-account key file, made once.
std::string PrivateKeyPem() {
  static const std::string pem = [] {
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_RSA_gen(2048), EVP_PKEY_free);
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
    PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    char* data = nullptr;
    long size = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<size_t>(size));
  }();
  return pem;
}

std::string Quoted(std::string_view text) { return Value(text).ToJson(); }

std::vector<GetLoopCase> Cases() {
  std::vector<GetLoopCase> cases;
  cases.push_back({
      .name = "DummyCreatures",
      .source = "dummy",
      .yaml =
          [](const std::string&) {
            return "  name: dummy\n  stream: creatures\n  authentication:\n    type: api_key\n"
                   "    params:\n      token: a_token\n";
          },
      .ids = {"9898", "88787", "98", "3333", "56565"},
      .records = 5,
      .iterations = 3,
  });
  cases.push_back({
      .name = "DummyPlants",
      .source = "dummy",
      .yaml =
          [](const std::string&) {
            return "  name: dummy\n  stream: plants\n  authentication: {type: api_key, params: "
                   "{token: a_token}}\n";
          },
      .records = 5,
      .iterations = 3,
  });
  cases.push_back({
      .name = "GeneratorPages",
      .source = "generator",
      .yaml =
          [](const std::string&) {
            return "  name: generator\n  stream: records\n  count: 25\n  page_size: 10\n";
          },
      .records = 25,
      .iterations = 3,
  });
  cases.push_back({
      .name = "GeneratorEmpty",
      .source = "generator",
      .yaml =
          [](const std::string&) { return "  name: generator\n  stream: events\n  count: 0\n"; },
      .records = 0,
      .iterations = 1,
  });
  cases.push_back({
      .name = "RestApiCursor",
      .source = "rest_api",
      .yaml =
          [](const std::string& url) {
            return "  name: rest_api\n  stream: users\n  base_url: " + url +
                   "/api\n  endpoints:\n    users:\n      path: /users\n      record_selector: "
                   "data\n"
                   "      pagination: {type: cursor, cursor_path: next_cursor}\n";
          },
      .script =
          [](LoopbackHttpServer& server) {
            server.ExpectJson("GET", "/api/users",
                              R"({"data": [{"id": "u1"}, {"id": "u2"}], "next_cursor": "n2"})");
            server.ExpectJson("GET", "/api/users",
                              R"({"data": [{"id": "u3"}], "next_cursor": null})");
          },
      .check_requests =
          [](const std::vector<LoopbackRequest>& requests) {
            EXPECT_EQ(requests[0].query, "");
            EXPECT_EQ(requests[1].query, "cursor=n2");
          },
      .ids = {"u1", "u2", "u3"},
      .records = 3,
      .iterations = 2,
  });
  cases.push_back({
      .name = "NotionPages",
      .source = "notion",
      .yaml =
          [](const std::string& url) {
            return "  name: notion\n  stream: pages\n  base_url: " + url +
                   "/v1\n  authentication: {type: bearer, params: {token: notion-loop-token-7d2}}\n"
                   "  database_ids: [db-1]\n  page_size: 2\n";
          },
      .script =
          [](LoopbackHttpServer& server) {
            server.ExpectJson("GET", "/v1/databases/db-1",
                              R"({"object": "database", "id": "db-1", "title": [],
                              "data_sources": [{"id": "ds-1", "name": "Tasks"}]})");
            server.ExpectJson("POST", "/v1/data_sources/ds-1/query",
                              R"({"object": "list", "results": [{"object": "page", "id": "page-1"},
                              {"object": "page", "id": "page-2"}], "has_more": true,
                              "next_cursor": "cursor-2"})");
            server.ExpectJson("POST", "/v1/data_sources/ds-1/query",
                              R"({"object": "list", "results": [{"object": "page", "id": "page-3"}],
                              "has_more": false, "next_cursor": null})");
          },
      .check_requests =
          [](const std::vector<LoopbackRequest>& requests) {
            for (const LoopbackRequest& request : requests) {
              EXPECT_EQ(request.Header("notion-version"), "2025-09-03");
              EXPECT_EQ(request.Header("authorization"), "Bearer notion-loop-token-7d2");
            }
            EXPECT_EQ(Value::FromJson(requests[2].body)->GetString("start_cursor"), "cursor-2");
          },
      .ids = {"page-1", "page-2", "page-3"},
      .records = 3,
      .iterations = 2,
  });
  cases.push_back({
      .name = "CycleCustomers",
      .source = "cycle",
      .yaml =
          [](const std::string& url) {
            return "  name: cycle\n  stream: customers\n  slug: acme-product\n  base_url: " + url +
                   "\n  authentication: {type: api_key, params: {token: cycle-loop-token-3e1}}\n";
          },
      .script =
          [](LoopbackHttpServer& server) {
            server.ExpectJson("POST", "/graphql", R"({"data": {"getProductBySlug": {"customers": {
            "edges": [{"cursor": "cust-1", "node": {"id": "cust-1", "email": "a@acme.example",
                       "name": "A", "company": null}},
                      {"cursor": "cust-2", "node": {"id": "cust-2", "email": "b@acme.example",
                       "name": "B", "company": {"domain": "acme.example", "id": "co-1",
                       "name": "Acme"}}}],
            "pageInfo": {"hasPreviousPage": false, "hasNextPage": true,
                         "startCursor": "cust-1", "endCursor": "cust-2"}}}}})");
            server.ExpectJson("POST", "/graphql", R"({"data": {"getProductBySlug": {"customers": {
            "edges": [{"cursor": "cust-3", "node": {"id": "cust-3", "email": "c@acme.example",
                       "name": "C", "company": null}}],
            "pageInfo": {"hasPreviousPage": true, "hasNextPage": false,
                         "startCursor": "cust-3", "endCursor": "cust-3"}}}}})");
          },
      .check_requests =
          [](const std::vector<LoopbackRequest>& requests) {
            EXPECT_EQ(requests[0].Header("authorization"), "Bearer cycle-loop-token-3e1");
            Value second = Value::FromJson(requests[1].body).value();
            EXPECT_EQ(second.FindPath("variables.slug")->AsString(), "acme-product");
            EXPECT_NE(second.GetString("query").find(R"(cursor: "cust-2", direction: AFTER)"),
                      std::string::npos);
          },
      .ids = {"cust-1", "cust-2", "cust-3"},
      .records = 3,
      .iterations = 2,
  });
  cases.push_back({
      .name = "GbifOccurrences",
      .source = "gbif",
      .yaml =
          [](const std::string& url) {
            return "  name: gbif\n  stream: occurrence\n  base_url: " + url +
                   "/v1\n  page_limit: 2\n  max_records: 5\n";
          },
      .script =
          [](LoopbackHttpServer& server) {
            server.ExpectJson("GET", "/v1/occurrence/search",
                              R"({"offset": 0, "limit": 2, "endOfRecords": false, "count": 9,
                              "results": [{"key": 101}, {"key": 102}]})");
            server.ExpectJson("GET", "/v1/occurrence/search",
                              R"({"offset": 2, "limit": 2, "endOfRecords": false, "count": 9,
                              "results": [{"key": 103}, {"gbifID": "104"}]})");
            server.ExpectJson("GET", "/v1/occurrence/search",
                              R"({"offset": 4, "limit": 1, "endOfRecords": false, "count": 9,
                              "results": [{"key": 105}]})");
          },
      .check_requests =
          [](const std::vector<LoopbackRequest>& requests) {
            EXPECT_EQ(requests[0].QueryParameters(),
                      (QueryParams{{"limit", "2"}, {"offset", "0"}}));
            EXPECT_EQ(requests[1].QueryParameters(),
                      (QueryParams{{"limit", "2"}, {"offset", "2"}}));
            // max_records 5: the last page asks for what is left.
            EXPECT_EQ(requests[2].QueryParameters(),
                      (QueryParams{{"limit", "1"}, {"offset", "4"}}));
          },
      .ids = {"101", "102", "103", "104", "105"},
      .records = 5,
      .iterations = 3,
  });
  cases.push_back({
      .name = "PokeapiPokemon",
      .source = "pokeapi",
      .yaml =
          [](const std::string& url) {
            return "  name: pokeapi\n  stream: pokemon\n  base_url: " + url + "/api/v2\n";
          },
      .script =
          [](LoopbackHttpServer& server) {
            server.ExpectJson("GET", "/api/v2/pokemon",
                              R"({"count": 3, "next": ")" + server.url() +
                                  R"(/api/v2/pokemon?offset=2&limit=2", "previous": null,
                              "results": [{"name": "bulbasaur", "url": "u1"},
                                          {"name": "ivysaur", "url": "u2"}]})");
            server.ExpectJson("GET", "/api/v2/pokemon",
                              R"({"count": 3, "next": null, "previous": "p",
                              "results": [{"name": "venusaur", "url": "u3"}]})");
          },
      .check_requests =
          [](const std::vector<LoopbackRequest>& requests) {
            EXPECT_EQ(requests[0].query, "");
            EXPECT_EQ(requests[1].query, "offset=2&limit=2");
          },
      .ids = {"bulbasaur", "ivysaur", "venusaur"},
      .records = 3,
      .iterations = 2,
  });
  cases.push_back({
      .name = "HubspotContacts",
      .source = "hubspot",
      .yaml =
          [](const std::string& url) {
            return "  name: hubspot\n  stream: contacts\n  base_url: " + url +
                   "\n  authentication: {type: api_key, params: {token: hubspot-loop-token-c4a}}\n";
          },
      .script =
          [](LoopbackHttpServer& server) {
            server.ExpectJson("GET", "/crm/v3/properties/contacts",
                              R"({"results": [{"name": "email"}, {"name": "lastmodifieddate"}]})");
            server.ExpectJson("GET", "/crm/v3/objects/contacts",
                              R"({"results": [{"id": "1", "properties": {"email": "a@x.example",
                              "lastmodifieddate": "2024-01-01T00:00:00Z"}, "archived": false}],
                              "paging": {"next": {"after": "2", "link": "next-page"}}})");
            server.ExpectJson("GET", "/crm/v3/objects/contacts",
                              R"({"results": [{"id": "2", "properties": {"email": "b@x.example",
                              "lastmodifieddate": "2024-01-02T00:00:00Z"}, "archived": false}]})");
          },
      .check_requests =
          [](const std::vector<LoopbackRequest>& requests) {
            EXPECT_EQ(requests[0].Header("authorization"), "Bearer hubspot-loop-token-c4a");
            EXPECT_EQ(requests[1].QueryParameters(),
                      (QueryParams{{"limit", "100"}, {"properties", "email,lastmodifieddate"}}));
            EXPECT_EQ(requests[2].QueryValue("after"), "2");
          },
      .ids = {"1", "2"},
      .records = 2,
      .iterations = 2,
  });
  cases.push_back({
      .name = "PeriscopeDashboards",
      .source = "periscope",
      .yaml =
          [](const std::string& url) {
            return "  name: periscope\n  stream: dashboards\n  workspace_name: acme\n"
                   "  client_site_id: 42\n  database_id: 7\n  x_csrf_token: "
                   "periscope-csrf-loop-5b\n"
                   "  base_url: " +
                   url +
                   "\n  authentication: {type: cookies, params: {cookies: {cf_bm: cf-bm-loop-5b, "
                   "periscope_session: session-loop-5b}}}\n";
          },
      .script =
          [](LoopbackHttpServer& server) {
            server.ExpectJson(
                "GET", "/login_state/dashboards",
                R"({"Dashboard": [{"id": 11, "name": "Sales"}, {"id": 12, "name": "Ops"}]})");
          },
      .check_requests =
          [](const std::vector<LoopbackRequest>& requests) {
            EXPECT_EQ(requests[0].QueryParameters(), (QueryParams{{"client_site_id", "42"}}));
            EXPECT_EQ(requests[0].Header("cookie"),
                      "__cf_bm=cf-bm-loop-5b; periscope_session=session-loop-5b");
            EXPECT_EQ(requests[0].Header("x-csrf-token"), "periscope-csrf-loop-5b");
          },
      .ids = {"11", "12"},
      .records = 2,
      .iterations = 1,
  });
  cases.push_back({
      .name = "SanaAiReport",
      .source = "sana_ai",
      .yaml =
          [](const std::string& url) {
            return "  name: sana_ai\n  stream: insight_report\n  domain: acme\n  query: select 1\n"
                   "  base_url: " +
                   url +
                   "/api/v1\n  authentication: {type: oauth, params: {token_refresh_endpoint: " +
                   url +
                   "/token, client_id: sana-client, client_secret: sana-secret-loop-9f, "
                   "grant_type: "
                   "client_credentials}}\n";
          },
      .script =
          [](LoopbackHttpServer& server) {
            server.ExpectJson("POST", "/token",
                              R"({"access_token": "sana-access-loop-9f", "expires_in": 3600})");
            server.ExpectJson("POST", "/api/v1/reports/query", R"({"data": {"jobId": "job-7"}})");
            server.ExpectJson("GET", "/api/v1/reports/jobs/job-7",
                              R"({"data": {"status": "successful", "link": {"url": ")" +
                                  server.url() + R"(/api/v1/files/job-7.csv"}}})");
            server.Expect(
                "GET", "/api/v1/files/job-7.csv",
                {.headers = {{"Content-Type", "text/csv"}}, .body = "name,score\nada,3\nalan,5\n"});
          },
      .check_requests =
          [](const std::vector<LoopbackRequest>& requests) {
            EXPECT_EQ(Value::FromJson(requests[1].body)->GetString("format"), "csv");
            for (size_t i = 1; i < requests.size(); ++i) {
              EXPECT_EQ(requests[i].Header("authorization"), "Bearer sana-access-loop-9f") << i;
            }
          },
      .ids = {"0", "1"},
      .records = 2,
      .iterations = 1,
  });
  cases.push_back({
      .name = "GsheetsWorksheet",
      .source = "gsheets",
      .yaml =
          [](const std::string& url) {
            Value key(
                Value::Map{{"type", Value("service_account")},
                           {"project_id", Value("acme-sheets")},
                           {"private_key_id", Value("kid-loop-0001")},
                           {"private_key", Value(PrivateKeyPem())},
                           {"client_email", Value("reader@acme-sheets.iam.gserviceaccount.com")},
                           {"token_uri", Value(url + "/token")}});
            return "  name: gsheets\n  stream: worksheet\n  spreadsheet_url: "
                   "https://docs.google.com/spreadsheets/d/sheet-loop-1/edit\n  worksheet_name: "
                   "Sheet1\n  base_url: " +
                   url + "\n  service_account_key: " + Quoted(key.ToJson()) + "\n";
          },
      .script =
          [](LoopbackHttpServer& server) {
            server.ExpectJson("POST", "/token",
                              R"({"access_token": "gsheets-access-loop-2", "expires_in": 3600,
                              "token_type": "Bearer"})");
            server.ExpectJson("GET", "/v4/spreadsheets/sheet-loop-1/values/%27Sheet1%27",
                              R"({"range": "Sheet1!A1:B3", "majorDimension": "ROWS",
                              "values": [["firstName", "age"], ["Ada", "36"], ["Alan", "41"]]})");
          },
      .check_requests =
          [](const std::vector<LoopbackRequest>& requests) {
            EXPECT_NE(requests[0].body.find(
                          "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"),
                      std::string::npos)
                << requests[0].body;
            EXPECT_EQ(requests[1].Header("authorization"), "Bearer gsheets-access-loop-2");
          },
      .records = 2,
      .iterations = 1,
  });
  return cases;
}

class SourceGetLoopTest : public testing::TestWithParam<GetLoopCase> {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinConnectors(registry_).ok()); }
  ConnectorRegistry registry_;
};

TEST_P(SourceGetLoopTest, ReadsToTheEnd) {
  const GetLoopCase& test = GetParam();
  LoopbackHttpServer server;
  if (test.script) test.script(server);
  auto source = testing_support::MakeSourceFromYaml(registry_, test.yaml(server.url()));
  ASSERT_TRUE(source.has_value()) << source.error().ToString();
  testing_support::GetLoopResult loop = testing_support::ReadToEnd(**source);
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(test.iterations));
  EXPECT_EQ(loop.records(), test.records);
  std::vector<std::string> ids = loop.ids();
  if (!test.ids.empty()) {
    EXPECT_EQ(ids, test.ids);
  }
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size()) << "repeated ids";
  for (const std::string& payload : loop.payloads()) {
    EXPECT_TRUE(Value::FromJson(payload).has_value()) << payload;
  }
  if (test.check_requests) {
    std::vector<LoopbackRequest> requests = server.requests();
    ASSERT_GE(requests.size(), 1u);
    test.check_requests(requests);
  }
}

INSTANTIATE_TEST_SUITE_P(EverySource, SourceGetLoopTest, testing::ValuesIn(Cases()),
                         [](const testing::TestParamInfo<GetLoopCase>& param_info) {
                           return param_info.param.name;
                         });

TEST(SourceGetLoopCoverageTest, EveryRegisteredSourceIsReadOrExcused) {
  ConnectorRegistry registry;
  ASSERT_TRUE(RegisterBuiltinConnectors(registry).ok());
  std::set<std::string> read;
  for (const GetLoopCase& test : Cases()) read.insert(test.source);
  std::vector<std::string> problems;
  std::set<std::string> registered;
  for (const SourceDescriptor* source : registry.sources()) {
    registered.insert(source->name);
    bool has_case = read.count(source->name) > 0;
    bool excused = kNotReadHere.count(source->name) > 0;
    if (!has_case && !excused) problems.push_back(source->name + ": no Get loop case, no reason");
    if (has_case && excused) problems.push_back(source->name + ": read here and excused");
  }
  for (const std::string& name : read) {
    if (registered.count(name) == 0) problems.push_back(name + ": a case for no registered source");
  }
  for (const auto& [name, reason] : kNotReadHere) {
    // A source of a family this build left out is neither registered nor read.
    if (registered.count(name) == 0 && registry.UnbuiltFamily(name).empty()) {
      problems.push_back(name + ": excused but not registered");
    }
    std::cout << "Not read here: " << name << ": " << reason << "\n";
  }
  std::string list;
  for (const std::string& problem : problems) list += "\n  " + problem;
  EXPECT_TRUE(problems.empty()) << list;
}

}  // namespace
}  // namespace bizon
