#include "http/json_page.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

struct Seen {
  std::string json;
  std::vector<std::optional<Value>> fields;
};

std::vector<Seen> Collect(const JsonPage& page, std::string_view path,
                          const std::vector<std::string>& fields) {
  std::vector<Seen> seen;
  Status status = page.ForEachObject(path, fields, [&](const JsonObjectView& object) {
    seen.push_back({std::string(object.json), object.fields});
    return Status::Ok();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
  return seen;
}

TEST(JsonPageTest, SlicesRecordsAsTheirOwnBytes) {
  JsonPage page(R"({"count": 2, "results": [ {"name": "bulbasaur", "url": "u/1"} ,
      {"url":"u/2","name":"ivysaur"}
    ], "next": null})",
                "GET test");
  auto seen = Collect(page, "results", {"name"});
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].json, R"({"name": "bulbasaur", "url": "u/1"})");
  EXPECT_EQ(seen[1].json, R"({"url":"u/2","name":"ivysaur"})");
  EXPECT_EQ(seen[0].fields[0], Value("bulbasaur"));
  EXPECT_EQ(seen[1].fields[0], Value("ivysaur"));
}

TEST(JsonPageTest, ExtractsNestedMissingAndTypedFields) {
  JsonPage page(R"({"data": {"items": [
      {"id": 7, "parent": {"type": "database_id", "database_id": "d1"}, "ok": true,
       "score": 1.5, "tags": ["a", "b"], "none": null, "text": "caf\u00e9 \"q\""},
      {"id": "x"}
    ]}})",
                "GET test");
  auto seen = Collect(page, "data.items",
                      {"id", "parent.type", "parent.database_id", "ok", "score", "tags.1", "none",
                       "missing", "parent.missing", "text", "tags"});
  ASSERT_EQ(seen.size(), 2u);
  const auto& first = seen[0].fields;
  EXPECT_EQ(first[0], Value(int64_t{7}));
  EXPECT_EQ(first[1], Value("database_id"));
  EXPECT_EQ(first[2], Value("d1"));
  EXPECT_EQ(first[3], Value(true));
  EXPECT_EQ(first[4], Value(1.5));
  EXPECT_EQ(first[5], Value("b"));
  ASSERT_TRUE(first[6].has_value());
  EXPECT_TRUE(first[6]->is_null());
  EXPECT_FALSE(first[7].has_value());
  EXPECT_FALSE(first[8].has_value());
  EXPECT_EQ(first[9], Value("café \"q\""));
  EXPECT_EQ(first[10], Value(Value::List{"a", "b"}));
  // The whole object, although fields were read out of order.
  EXPECT_TRUE(seen[0].json.starts_with(R"({"id": 7,)"));
  EXPECT_TRUE(seen[0].json.ends_with(R"("text": "caf\u00e9 \"q\""})"));
  EXPECT_EQ(seen[1].json, R"({"id": "x"})");
  EXPECT_EQ(seen[1].fields[0], Value("x"));
  EXPECT_FALSE(seen[1].fields[1].has_value());
}

TEST(JsonPageTest, RootArrayAndFind) {
  JsonPage page(R"([{"a": 1}, {"a": 2}])", "GET test");
  auto seen = Collect(page, "", {"a"});
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].fields[0], Value(int64_t{2}));

  JsonPage object(R"({"paging": {"next": {"after": "abc"}}, "has_more": false, "n": null})",
                  "GET test");
  EXPECT_EQ(*object.Find("paging.next.after"), std::optional<Value>(Value("abc")));
  EXPECT_EQ(*object.Find("has_more"), std::optional<Value>(Value(false)));
  EXPECT_EQ(*object.Find("n"), std::optional<Value>(Value()));
  EXPECT_EQ(*object.Find("missing"), std::optional<Value>());
  EXPECT_EQ(*object.Find("has_more.deeper"), std::optional<Value>());
  EXPECT_EQ(*object.Find("$.paging.next.after"), std::optional<Value>(Value("abc")));
}

TEST(JsonPageTest, MissingArrayAndNonObjects) {
  JsonPage page(R"({"results": null, "list": [1, 2]})", "GET test");
  Status missing =
      page.ForEachObject("other", {}, [](const JsonObjectView&) { return Status::Ok(); });
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("no array at 'other'"), std::string::npos);
  EXPECT_TRUE(page.ForEachObject(
                      "results", {}, [](const JsonObjectView&) { return Status::Ok(); },
                      /*missing_is_empty=*/true)
                  .ok());
  Status scalars =
      page.ForEachObject("list", {}, [](const JsonObjectView&) { return Status::Ok(); });
  EXPECT_FALSE(scalars.ok());
  EXPECT_NE(scalars.message().find("is not a JSON object"), std::string::npos);
}

TEST(JsonPageTest, InvalidAndTruncatedJsonFail) {
  for (std::string body :
       {std::string(R"({"results": [{"a": 1}, {"a": )"), std::string("<html>oops</html>"),
        std::string(R"({"results": [{"a" 1}]})")}) {
    JsonPage page(body, "GET http://x/y");
    Status status =
        page.ForEachObject("results", {"a"}, [](const JsonObjectView&) { return Status::Ok(); });
    EXPECT_FALSE(status.ok()) << body;
    EXPECT_EQ(status.failure_class(), FailureClass::kSource);
  }
  JsonPage page("not json", "GET http://x/y");
  auto found = page.Find("a");
  ASSERT_FALSE(found.has_value());
  EXPECT_NE(found.error().message().find("invalid JSON in the response of GET http://x/y"),
            std::string::npos);
}

// Found by fuzz/fuzz_json_page: the on-demand reader skips a record's bytes unchecked, so a
// corrupt page used to hand over a broken record (and, without fields, succeed) before failing.
TEST(JsonPageTest, CorruptRecordIsNeverHandedOn) {
  std::string body = R"({"results":[{"id":1,"meta":{"tags":{"0":"zero:{"0":"ze1,"id":2}}}]}  ]}  )";
  for (const std::vector<std::string>& fields :
       {std::vector<std::string>{}, std::vector<std::string>{"id", "meta.tags.0"}}) {
    JsonPage page(body, "GET http://x/y");
    int visited = 0;
    Status status = page.ForEachObject("results", fields, [&](const JsonObjectView&) {
      ++visited;
      return Status::Ok();
    });
    EXPECT_FALSE(status.ok());
    EXPECT_EQ(status.failure_class(), FailureClass::kSource);
    EXPECT_EQ(visited, 0);
  }
  JsonPage trailing(R"({"next": "abc"} {"next": "def"})", "GET http://x/y");
  EXPECT_FALSE(trailing.Find("next").has_value());
}

std::vector<std::string> Selected(const JsonPage& page, std::string_view selector,
                                  const std::vector<std::string>& fields = {"id"}) {
  std::vector<std::string> seen;
  Status status = page.ForEachSelected(selector, fields, [&](const JsonObjectView& object) {
    seen.push_back(object.fields.empty() || !object.fields[0]
                       ? std::string(object.json)
                       : object.fields[0]->ToDisplayString());
    return Status::Ok();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
  return seen;
}

TEST(JsonPageTest, JsonPathSelectorsVisitEveryRecordTheyReach) {
  JsonPage page(R"({"data": [{"items": [{"id": 1}, {"id": 2}]}, {"items": []},
                             {"other": 1}, {"items": [{"id": 3}]}],
                    "meta": {"a": {"id": 7}, "b": {"id": 8}}, "one": {"id": 9}})",
                "GET test");
  EXPECT_EQ(Selected(page, "$.data[*].items"), (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(Selected(page, "$['data'][0].items"), (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(Selected(page, "data[3].items"), (std::vector<std::string>{"3"}));
  EXPECT_EQ(Selected(page, "$.meta.*"), (std::vector<std::string>{"7", "8"}));
  EXPECT_EQ(Selected(page, "$.one"), (std::vector<std::string>{"9"}));  // An object: one record.
  EXPECT_TRUE(Selected(page, "$.missing[*].x").empty());
  // ForEachObject reads a wildcard path the same way.
  std::vector<std::string> ids;
  ASSERT_TRUE(page.ForEachObject("$.data[*].items", {"id"},
                                 [&](const JsonObjectView& object) {
                                   ids.push_back(object.fields[0]->ToDisplayString());
                                   return Status::Ok();
                                 })
                  .ok());
  EXPECT_EQ(ids, (std::vector<std::string>{"1", "2", "3"}));
  // The bytes are the page's.
  JsonPage spaced(R"({"d": [ {"id" : 1 , "x":[1, 2]} ]})", "GET test");
  EXPECT_EQ(Selected(spaced, "$.d[*]", {}),
            (std::vector<std::string>{R"({"id" : 1 , "x":[1, 2]})"}));
}

TEST(JsonPageTest, JsonPathErrorsNameThePath) {
  EXPECT_FALSE(ParseJsonPath("$..items").has_value());
  EXPECT_FALSE(ParseJsonPath("$.data[?(@.x)]").has_value());
  EXPECT_FALSE(ParseJsonPath("$.data['x").has_value());
  JsonPage page(R"({"data": [1, 2]})", "GET test");
  Status status =
      page.ForEachSelected("$.data", {}, [](const JsonObjectView&) { return Status::Ok(); });
  EXPECT_EQ(status.failure_class(), FailureClass::kSource);
  EXPECT_NE(status.message().find("element 0 of '$.data' is not a JSON object"), std::string::npos);
}

TEST(JsonPageTest, DetectsTheRecordsWhenNoSelectorIsGiven) {
  size_t length = 0;
  EXPECT_EQ(JsonPage(R"([{"id": 1}])", "t").DetectRecordSelector(&length).value(), "$");
  EXPECT_EQ(length, 1u);
  EXPECT_EQ(JsonPage(R"({"count": 3, "next": null, "results": [{}, {}], "tags": [1]})", "t")
                .DetectRecordSelector(&length)
                .value(),
            "$.results");
  EXPECT_EQ(length, 2u);
  EXPECT_EQ(JsonPage(R"({"a b": [1, 2], "c": [3]})", "t").DetectRecordSelector().value(),
            "$['a b']");
  EXPECT_EQ(JsonPage(R"({"name": "pikachu", "id": 25})", "t").DetectRecordSelector().value(), "$");
  EXPECT_FALSE(JsonPage("42", "t").DetectRecordSelector().has_value());
}

TEST(JsonPageTest, PointerEscapes) {
  EXPECT_EQ(DottedPathToPointer(""), "");
  EXPECT_EQ(DottedPathToPointer("$"), "");
  EXPECT_EQ(DottedPathToPointer("a.b~c/d"), "/a/b~0c~1d");
}

}  // namespace
}  // namespace bizon
