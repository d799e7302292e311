#include "connectors/sources/hubspot/hubspot_api.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace bizon {
namespace {

JsonPage HubspotJsonPage(std::string body) { return JsonPage(std::move(body), "GET test"); }

std::string Contact(int id, std::string_view modified) {
  return fmt::format(
      R"({{"id":"{}","properties":{{"email":"c{}@example.com","lastmodifieddate":"{}"}},)"
      R"("createdAt":"2024-01-01T00:00:00.000Z","updatedAt":"2030-01-01T00:00:00.000Z",)"
      R"("archived":false}})",
      id, id, modified);
}

HubspotObjectPage SearchPage(const std::vector<std::pair<int, int64_t>>& objects,
                             std::optional<std::string> after) {
  HubspotObjectPage page;
  for (const auto& [id, ms] : objects) page.objects.push_back({std::to_string(id), "{}", ms});
  page.next_after = std::move(after);
  return page;
}

std::vector<std::string> Ids(const std::vector<HubspotObject>& objects) {
  std::vector<std::string> ids;
  for (const HubspotObject& object : objects) ids.push_back(object.id);
  return ids;
}

TEST(HubspotApiTest, ModifiedPropertyPerObject) {
  EXPECT_EQ(HubspotModifiedProperty("contacts"), "lastmodifieddate");
  EXPECT_EQ(HubspotModifiedProperty("deals"), "hs_lastmodifieddate");
  EXPECT_EQ(HubspotModifiedProperty("tickets"), "hs_lastmodifieddate");
}

TEST(HubspotApiTest, ObjectPageKeepsTheBytesAndReadsPaging) {
  std::string first = Contact(1, "2024-03-01T09:00:00.250Z");
  auto page = ParseHubspotObjectPage(
      HubspotJsonPage(R"({"results":[)" + first + "," + Contact(2, "not a date") +
                      R"(],"paging":{"next":{"after":"2","link":"https://x/?after=2"}}})"),
      "lastmodifieddate");
  ASSERT_TRUE(page.has_value()) << page.error().message();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].id, "1");
  EXPECT_EQ(page->objects[0].json, first);
  EXPECT_EQ(page->objects[0].modified_ms, 1709283600250);
  // An unreadable property falls back to updatedAt.
  EXPECT_EQ(page->objects[1].modified_ms, 1893456000000);
  EXPECT_EQ(page->next_after, "2");
  EXPECT_EQ(page->next_link, "https://x/?after=2");
}

TEST(HubspotApiTest, LastAndEmptyPagesHaveNoNext) {
  auto last =
      ParseHubspotObjectPage(HubspotJsonPage(R"({"results":[)" + Contact(1, "x") + "]}"), "p");
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->objects.size(), 1u);
  EXPECT_FALSE(last->next_after);
  auto empty = ParseHubspotObjectPage(HubspotJsonPage(R"({"total":0,"results":[]})"), "p");
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->objects.empty());
  EXPECT_FALSE(empty->next_after);
}

TEST(HubspotApiTest, BrokenPagesFail) {
  auto truncated = ParseHubspotObjectPage(HubspotJsonPage(R"({"results":[{"id":"1"},{"id":)"), "p");
  ASSERT_FALSE(truncated.has_value());
  EXPECT_EQ(truncated.error().failure_class(), FailureClass::kSource);
  auto no_id = ParseHubspotObjectPage(HubspotJsonPage(R"({"results":[{"properties":{}}]})"), "p");
  ASSERT_FALSE(no_id.has_value());
  EXPECT_NE(no_id.error().message().find("has no string 'id'"), std::string::npos);
}

TEST(HubspotApiTest, PropertySelection) {
  auto names = ParseHubspotPropertyNames(
      HubspotJsonPage(R"({"results":[{"name":"email","label":"Email"},{"name":"firstname"}]})"));
  ASSERT_TRUE(names.has_value());
  EXPECT_EQ(*names, (std::vector<std::string>{"email", "firstname"}));
  EXPECT_EQ(*SelectHubspotProperties(*names, "all", {"ignored"}), *names);
  EXPECT_EQ(*SelectHubspotProperties(*names, "selected", {"firstname", "firstname"}),
            (std::vector<std::string>{"firstname"}));
  auto missing = SelectHubspotProperties(*names, "selected", {"email", "phone"});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message(), "Property phone is not present in HubSpot.");
  auto none = SelectHubspotProperties(*names, "selected", {});
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message().find("No properties selected to sync"), std::string::npos);
  EXPECT_FALSE(SelectHubspotProperties({}, "all", {}).has_value());
}

TEST(HubspotApiTest, SearchBodyFiltersTheWindowOldestFirst) {
  HubspotSearchCursor cursor{.lower_ms = 1000, .after = "200"};
  auto body = Value::FromJson(
      HubspotSearchBody(cursor, 5000, "hs_lastmodifieddate", {"dealname", "amount"}, 200));
  ASSERT_TRUE(body.has_value());
  auto expected = Value::FromJson(R"({
    "filterGroups": [{"filters": [
      {"propertyName": "hs_lastmodifieddate", "operator": "GTE", "value": "1000"},
      {"propertyName": "hs_lastmodifieddate", "operator": "LT", "value": "5000"}]}],
    "sorts": [{"propertyName": "hs_lastmodifieddate", "direction": "ASCENDING"}],
    "limit": 200, "properties": ["dealname", "amount"], "after": "200"})");
  EXPECT_EQ(body->ToJson(), expected->ToJson());
  // The first page has no `after`, and no properties asks for HubSpot's defaults.
  auto first = Value::FromJson(HubspotSearchBody({.lower_ms = 1}, 2, "p", {}, 10));
  EXPECT_EQ(first->Find("after"), nullptr);
  EXPECT_EQ(first->Find("properties"), nullptr);
}

TEST(HubspotApiTest, SearchFollowsThePagesWithinTheCap) {
  HubspotSearchCursor cursor{.lower_ms = 10};
  auto step = AdvanceHubspotSearch(cursor, SearchPage({{1, 10}, {2, 11}}, "2"), 2, 6);
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(Ids(step->emit), (std::vector<std::string>{"1", "2"}));
  ASSERT_TRUE(step->next);
  EXPECT_EQ(step->next->after, "2");
  EXPECT_EQ(step->next->lower_ms, 10);
  EXPECT_EQ(step->next->read_in_window, 2);
  auto last = AdvanceHubspotSearch(*step->next, SearchPage({{3, 12}}, std::nullopt), 2, 6);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(Ids(last->emit), (std::vector<std::string>{"3"}));
  EXPECT_FALSE(last->next);
}

TEST(HubspotApiTest, SearchMovesTheWindowAtTheCapWithoutLosingOrRepeating) {
  // Cap 4, pages of 2: after 4 results the query starts again from the newest time read (13),
  // and the ids already read at 13 are not emitted twice.
  HubspotSearchCursor cursor{.lower_ms = 10};
  auto one = AdvanceHubspotSearch(cursor, SearchPage({{1, 10}, {2, 12}}, "2"), 2, 4);
  ASSERT_TRUE(one.has_value() && one->next);
  auto two = AdvanceHubspotSearch(*one->next, SearchPage({{3, 13}, {4, 13}}, "4"), 2, 4);
  ASSERT_TRUE(two.has_value() && two->next);
  EXPECT_EQ(Ids(two->emit), (std::vector<std::string>{"3", "4"}));
  EXPECT_EQ(two->next->lower_ms, 13);
  EXPECT_FALSE(two->next->after);
  EXPECT_EQ(two->next->read_in_window, 0);
  EXPECT_EQ(two->next->skip_ids, (std::vector<std::string>{"3", "4"}));

  // The cursor survives the trip through the pagination value.
  auto restored = HubspotSearchCursor::FromValue(two->next->ToValue(), 0);
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->ToValue().ToJson(), two->next->ToValue().ToJson());

  auto three = AdvanceHubspotSearch(*restored, SearchPage({{3, 13}, {4, 13}}, "2"), 2, 4);
  ASSERT_TRUE(three.has_value() && three->next);
  EXPECT_TRUE(three->emit.empty());
  auto four =
      AdvanceHubspotSearch(*three->next, SearchPage({{5, 13}, {6, 14}}, std::nullopt), 2, 4);
  ASSERT_TRUE(four.has_value());
  EXPECT_EQ(Ids(four->emit), (std::vector<std::string>{"5", "6"}));
  EXPECT_FALSE(four->next);
}

TEST(HubspotApiTest, SearchMovesWhenTheQueryStopsAtTheCapWithMoreLeft) {
  HubspotObjectPage page = SearchPage({{1, 10}, {2, 11}}, std::nullopt);
  page.total = 3;  // No next page, yet one more object matches.
  auto step = AdvanceHubspotSearch({.lower_ms = 10}, page, 2, 4);
  ASSERT_TRUE(step.has_value() && step->next);
  EXPECT_EQ(step->next->lower_ms, 11);
  EXPECT_EQ(step->next->skip_ids, (std::vector<std::string>{"2"}));
  page.total = 2;  // Everything read.
  auto done = AdvanceHubspotSearch({.lower_ms = 10}, page, 2, 4);
  ASSERT_TRUE(done.has_value());
  EXPECT_FALSE(done->next);
}

TEST(HubspotApiTest, SearchFailsWhenTheCapIsOneMillisecond) {
  HubspotSearchCursor cursor{.lower_ms = 10};
  auto one = AdvanceHubspotSearch(cursor, SearchPage({{1, 10}, {2, 10}}, "2"), 2, 2);
  ASSERT_FALSE(one.has_value());
  EXPECT_EQ(one.error().failure_class(), FailureClass::kSource);
  EXPECT_NE(one.error().message().find("share the modification time 10"), std::string::npos);
}

TEST(HubspotApiTest, EmptyPaginationStartsAWindow) {
  auto cursor = HubspotSearchCursor::FromValue(Value::EmptyMap(), 42);
  ASSERT_TRUE(cursor.has_value());
  EXPECT_EQ(cursor->lower_ms, 42);
  EXPECT_FALSE(cursor->after);
  EXPECT_FALSE(HubspotSearchCursor::FromValue(Value(Value::Map{{"after", "2"}}), 0).has_value());
}

TEST(HubspotApiTest, ErrorBodies) {
  std::string daily = R"({"status":"error","message":"You have reached your daily limit.",
    "errorType":"RATE_LIMIT","correlationId":"c","policyName":"DAILY"})";
  EXPECT_EQ(HubspotRateLimitPolicy(daily), "DAILY");
  EXPECT_EQ(HubspotErrorSummary(daily), "RATE_LIMIT DAILY: You have reached your daily limit.");
  EXPECT_EQ(HubspotErrorSummary(R"({"status":"error","message":"No.","category":"VALIDATION"})"),
            "VALIDATION: No.");
  EXPECT_EQ(HubspotRateLimitPolicy("<html>"), "");
  EXPECT_EQ(HubspotErrorSummary("[]"), "");
  EXPECT_EQ(HubspotErrorSummary(R"({"message":"Bare."})"), "Bare.");
}

}  // namespace
}  // namespace bizon
