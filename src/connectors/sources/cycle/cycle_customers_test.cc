#include "connectors/sources/cycle/cycle_customers.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

JsonPage Page(std::string_view json) { return JsonPage(std::string(json), "POST test/graphql"); }

Value Json(std::string_view text) {
  auto parsed = Value::FromJson(text);
  EXPECT_TRUE(parsed.has_value());
  return parsed ? *parsed : Value();
}

constexpr std::string_view kTwoCustomers = R"({"data": {"getProductBySlug": {"customers": {
  "edges": [
    {"cursor": "c1", "node": {"id": "c1", "email": "a@x.io", "name": "Ann",
                              "company": {"domain": "x.io", "id": "k1", "name": "X"}}},
    {"cursor": "c2", "node": {"id": "c2", "email": null, "name": "Bob", "company": null}}],
  "pageInfo": {"hasPreviousPage": false, "hasNextPage": true, "startCursor": "c1",
               "endCursor": "c2"}}}}})";

TEST(CycleCustomersTest, FirstPageQueryHasNoWhereClause) {
  std::string query = CycleCustomersQuery("");
  EXPECT_NE(query.find("getProductBySlug(slug: $slug)"), std::string::npos);
  EXPECT_NE(query.find("customers(pagination: { size: 100 })"), std::string::npos);
  EXPECT_EQ(query.find("where"), std::string::npos);
  EXPECT_NE(query.find("node { id email name company { domain id name } }"), std::string::npos);
  EXPECT_NE(query.find("pageInfo { hasPreviousPage hasNextPage startCursor endCursor }"),
            std::string::npos);
}

TEST(CycleCustomersTest, NextPageQueryStartsAfterTheCursorEscaped) {
  EXPECT_NE(CycleCustomersQuery("abc").find(
                R"(pagination: { size: 100, where: { cursor: "abc", direction: AFTER } })"),
            std::string::npos);
  // A cursor cannot close the string literal early.
  EXPECT_NE(CycleCustomersQuery(R"(a"b\c)").find(R"(cursor: "a\"b\\c")"), std::string::npos);
}

TEST(CycleCustomersTest, BodyCarriesTheSlugAsAVariable) {
  Value body = Json(CycleCustomersRequestBody("acme", Value::EmptyMap()));
  EXPECT_EQ(body.Find("variables")->ToJson(), R"({"slug":"acme"})");
  EXPECT_EQ(body.GetString("query"), CycleCustomersQuery(""));
  Value next = Json(CycleCustomersRequestBody("acme", Json(R"({"hasNextPage": true,
      "endCursor": "c2"})")));
  EXPECT_EQ(next.GetString("query"), CycleCustomersQuery("c2"));
}

TEST(CycleCustomersTest, RecordsAreTheNodesAndPaginationThePageInfo) {
  auto iteration = ReadCycleCustomersPage(Page(kTwoCustomers), "acme", 7);
  ASSERT_TRUE(iteration.has_value()) << iteration.error().ToString();
  ASSERT_EQ(iteration->records.size(), 2u);
  EXPECT_EQ(iteration->records.id(0), "c1");
  EXPECT_EQ(
      Json(iteration->records.payload(0)).ToJson(),
      R"({"id":"c1","email":"a@x.io","name":"Ann","company":{"domain":"x.io","id":"k1","name":"X"}})");
  EXPECT_EQ(iteration->records.id(1), "c2");
  EXPECT_EQ(iteration->records.timestamp_us(1), 7);
  EXPECT_EQ(iteration->next_pagination.ToJson(),
            R"({"hasPreviousPage":false,"hasNextPage":true,"startCursor":"c1","endCursor":"c2"})");
}

TEST(CycleCustomersTest, LastPageEndsThePagination) {
  auto iteration = ReadCycleCustomersPage(Page(R"({"data": {"getProductBySlug": {"customers": {
      "edges": [], "pageInfo": {"hasPreviousPage": true, "hasNextPage": false,
      "startCursor": null, "endCursor": null}}}}})"),
                                          "acme", 0);
  ASSERT_TRUE(iteration.has_value()) << iteration.error().ToString();
  EXPECT_TRUE(iteration->records.empty());
  EXPECT_TRUE(iteration->IsLast());
}

TEST(CycleCustomersTest, GraphqlErrorsAreSourceErrorsWithTheirCodes) {
  auto iteration = ReadCycleCustomersPage(
      Page(R"({"errors": [{"message": "Unauthorized", "extensions": {"code": "UNAUTHORIZED"}},
                          {"message": "no code"}], "data": null})"),
      "acme", 0);
  ASSERT_FALSE(iteration.has_value());
  EXPECT_EQ(iteration.error().failure_class(), FailureClass::kSource);
  EXPECT_EQ(iteration.error().message(),
            "the Cycle API refused the customers query of POST test/graphql: UNAUTHORIZED: "
            "Unauthorized; no code");
}

TEST(CycleCustomersTest, UnknownProductNamesTheSlug) {
  auto iteration =
      ReadCycleCustomersPage(Page(R"({"data": {"getProductBySlug": null}})"), "nope", 0);
  ASSERT_FALSE(iteration.has_value());
  EXPECT_EQ(iteration.error().failure_class(), FailureClass::kSource);
  EXPECT_TRUE(iteration.error().message().ends_with("with this slug: nope"));
}

TEST(CycleCustomersTest, MalformedAnswersFail) {
  for (std::string_view body : {
           R"({"data": {"getProductBySlug": {"customers": {"edges": [{"node": {"id": 1}}],
               "pageInfo": {"hasNextPage": false}}}}})",
           R"({"data": {"getProductBySlug": {"customers": {"edges": [],
               "pageInfo": {"hasNextPage": true, "endCursor": null}}}}})",
           R"({"data": {"getProductBySlug": {"customers": {"edges": []}}}})",
           R"({"data": {"getProductBySlug": {}}})",
           R"({"data": {"getProductBySlug": {"customers": {"edges": [{"node": )",
       }) {
    auto iteration = ReadCycleCustomersPage(Page(body), "acme", 0);
    EXPECT_FALSE(iteration.has_value()) << body;
  }
}

}  // namespace
}  // namespace bizon
