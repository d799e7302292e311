// The resources form built from pipeline YAML against a loopback server: a parent's records make
// one child task each (the parent's fields resolved into path and params, include_from_parent
// copied in), each resource routed to its own destination id, and a run stopped after any
// iteration resumed from the stored pagination without asking for anything twice.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bizon/registry.h"
#include "connectors/registration.h"
#include "connectors/sources/rest_api/rest_resources.h"
#include "testing/loopback_http_server.h"
#include "testing/pipeline_source.h"

namespace bizon {
namespace {

using testing_support::LoopbackHttpServer;
using testing_support::LoopbackRequest;

constexpr char kResources[] = R"(  resources:
    - name: teams
      path: /teams
      record_selector: teams
      pagination: {type: page_number, has_more_path: more}
    - name: members
      path: /teams/{team_id}/members
      params:
        team_id: {type: resolve, resource: teams, field: slug}
        region: "{resources.teams.region}"
      include_from_parent: [name]
      parallel: 2
      destination_id: team_members
)";

class ResourcesSourceTest : public testing::Test {
 protected:
  ResourcesSourceTest() : server_(LoopbackHttpServer::Order::kPerRoute) {}
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinConnectors(registry_).ok()); }

  std::unique_ptr<Source> Make() {
    auto made = testing_support::MakeSourceFromYaml(
        registry_,
        "  name: rest_api\n  stream: org\n  base_url: " + server_.url() + "\n" + kResources);
    EXPECT_TRUE(made.has_value()) << made.error().ToString();
    return made ? std::move(*made) : nullptr;
  }

  void ScriptTeams() {
    server_.ExpectJson("GET", "/teams",
                       R"({"teams": [{"id": 1, "slug": "a b", "name": "Alpha", "region": "eu"},
                                     {"id": 2, "slug": "beta", "name": "Beta", "region": "us"}],
                          "more": true})");
    server_.ExpectJson("GET", "/teams",
                       R"({"teams": [{"id": 3, "slug": "gamma", "name": "Gamma", "region": "eu"}],
                          "more": false})");
    // No record_selector: the members list is found in each page.
    server_.ExpectJson("GET", "/teams/a%20b/members", R"({"members": [{"id": 11}, {"id": 12}]})");
    server_.ExpectJson("GET", "/teams/beta/members", R"({"members": [{"id": 21}], "n": 1})");
    server_.ExpectJson("GET", "/teams/gamma/members", R"({"members": []})");
  }

  ConnectorRegistry registry_;
  LoopbackHttpServer server_;
};

TEST_F(ResourcesSourceTest, ChildrenAreReadPerParentRecordIntoTheirOwnDestination) {
  ScriptTeams();
  std::unique_ptr<Source> source = Make();
  ASSERT_NE(source, nullptr);
  testing_support::GetLoopResult loop = testing_support::ReadToEnd(*source);
  // teams page 1, its two children, teams page 2, its child.
  ASSERT_NO_FATAL_FAILURE(loop.ExpectEndsAfter(4));
  EXPECT_EQ(loop.ids(), (std::vector<std::string>{"1", "2", "11", "12", "21", "3"}));
  std::vector<std::string> destinations;
  for (const SourceIteration& iteration : loop.iterations) {
    for (size_t i = 0; i < iteration.records.size(); ++i) {
      destinations.emplace_back(iteration.records.destination_id(i));
    }
  }
  EXPECT_EQ(destinations, (std::vector<std::string>{"teams", "teams", "team_members",
                                                    "team_members", "team_members", "teams"}));
  // The parent's name is copied into each child record, which keeps its own bytes first.
  EXPECT_EQ(loop.payloads()[2], R"({"id": 11,"_teams_name":"Alpha"})");
  for (const LoopbackRequest& request : server_.requests()) {
    if (request.path.starts_with("/teams/")) {
      EXPECT_EQ(request.QueryParameters().size(), 1u) << request.target;
      EXPECT_TRUE(request.QueryValue("region") == "eu" || request.QueryValue("region") == "us");
    }
  }
  EXPECT_EQ(server_.pending(), 0u);
}

TEST_F(ResourcesSourceTest, AStoppedRunResumesWhereItStopped) {
  ScriptTeams();
  std::unique_ptr<Source> first = Make();
  ASSERT_NE(first, nullptr);
  auto page = first->Get(Value::EmptyMap());
  ASSERT_TRUE(page.has_value()) << page.error().ToString();
  // The recorded position: the two child tasks, then the parent's next page.
  Value stored = Value::FromJson(page->next_pagination.ToJson()).value();
  const Value* queue = stored.Find("queue");
  ASSERT_NE(queue, nullptr);
  ASSERT_EQ(queue->AsList().size(), 3u);
  EXPECT_EQ(queue->AsList()[0].ToJson(),
            R"({"r":"members","parent":{"slug":"a b","region":"eu","name":"Alpha"},"page":{}})");
  EXPECT_EQ(queue->AsList()[2].ToJson(), R"({"r":"teams","page":{"page":2}})");

  // A new source, as a new process would build it, continues from that position.
  std::unique_ptr<Source> second = Make();
  ASSERT_NE(second, nullptr);
  std::vector<std::string> ids;
  Value pagination = stored;
  for (int i = 0; i < 10; ++i) {
    auto next = second->Get(pagination);
    ASSERT_TRUE(next.has_value()) << next.error().ToString();
    for (size_t r = 0; r < next->records.size(); ++r) ids.emplace_back(next->records.id(r));
    if (next->IsLast()) break;
    pagination = Value::FromJson(next->next_pagination.ToJson()).value();
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"11", "12", "21", "3"}));
  EXPECT_EQ(server_.requests().size(), 5u);  // Nothing asked for twice.
}

TEST(RestResourcesTest, PlaceholdersResolveFromTheParentRecord) {
  Value parent = Value::FromJson(R"({"number": 7, "user.login": "a/b"})").value();
  EXPECT_EQ(ResolvePlaceholders("/issues/{resources.issues.number}/x", parent, true).value(),
            "/issues/7/x");
  EXPECT_EQ(ResolvePlaceholders("by {resources.issues.user.login}", parent, true).value(),
            "by a%2Fb");
  EXPECT_EQ(ResolvePlaceholders("{resources.issues.user.login}", parent, false).value(), "a/b");
  EXPECT_EQ(ResolvePlaceholders("{literal}", parent, false).value(), "{literal}");
  auto missing = ResolvePlaceholders("{resources.issues.title}", parent, false);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("has no 'title'"), std::string::npos);
  Value body = Value::FromJson(R"({"q": ["{resources.issues.number}", 1]})").value();
  EXPECT_EQ(ResolveBodyPlaceholders(body, parent).value().ToJson(), R"({"q":["7",1]})");
}

}  // namespace
}  // namespace bizon
