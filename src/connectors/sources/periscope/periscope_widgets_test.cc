#include "connectors/sources/periscope/periscope_widgets.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

Value Parse(std::string_view json) {
  auto parsed = Value::FromJson(json);
  EXPECT_TRUE(parsed.has_value());
  return parsed ? *parsed : Value();
}

TEST(PeriscopeWidgetsTest, RecordIdsAreIntegersOrStrings) {
  EXPECT_EQ(*PeriscopeRecordId(Value(42), "GET x", 0), "42");
  EXPECT_EQ(*PeriscopeRecordId(Value("d-7"), "GET x", 0), "d-7");
  auto missing = PeriscopeRecordId(std::nullopt, "GET https://h/login_state/dashboards", 3);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().failure_class(), FailureClass::kSource);
  EXPECT_NE(missing.error().message().find("item 3 of the response of GET https://h/login_state"),
            std::string::npos);
  EXPECT_FALSE(PeriscopeRecordId(Value(), "GET x", 0).has_value());
  EXPECT_FALSE(PeriscopeRecordId(Value(1.5), "GET x", 0).has_value());
}

TEST(PeriscopeWidgetsTest, TextboxTextWalksTheSlateDocument) {
  Value textbox = Parse(R"({"id": 5, "text_data": {"object": "value", "document": {
    "object": "document", "nodes": [
      {"object": "block", "type": "paragraph", "nodes": [
        {"object": "text", "leaves": [{"text": "\ufeff  Revenue "}, {"text": "by month\u00a0"}]},
        {"object": "inline", "type": "link", "data": {"url": "https://example.com/doc"},
         "nodes": [{"object": "text", "leaves": [{"text": " the "}, {"text": "guide"}]}]},
        {"object": "inline", "type": "link", "data": {}, "nodes": [
          {"object": "text", "leaves": [{"text": "no url: descended"}]}]}
      ]},
      {"object": "block", "type": "heading", "nodes": [
        {"object": "block", "type": "quote", "nodes": [
          {"object": "text", "leaves": [{"text": "deep"}]}]}]}
    ]}}})");
  EXPECT_EQ(PeriscopeTextboxText(textbox),
            "Revenue by month [theguide](https://example.com/doc) no url: descended deep");
}

TEST(PeriscopeWidgetsTest, EmptyTextDataGivesEmptyText) {
  EXPECT_EQ(PeriscopeTextboxText(Parse(R"({"id": 1, "text_data": null})")), "");
  EXPECT_EQ(PeriscopeTextboxText(Parse(R"({"id": 1, "text_data": {}})")), "");
  EXPECT_EQ(PeriscopeTextboxText(Parse(R"({"id": 1})")), "");
  // Empty leaves still count as parts, joined by one space each, as in the original.
  EXPECT_EQ(PeriscopeTextboxText(Parse(R"({"text_data": {"document": {"nodes": [
                {"object": "text", "leaves": [{"text": "a"}, {"text": " "}, {"text": "b"}]}]}}})")),
            "a  b");
}

TEST(PeriscopeWidgetsTest, WidgetsFilteredOnTheDatabaseAndDeduplicated) {
  JsonPage page(R"({"Widget": [
      {"id": 1, "database_id": 999, "title": "a"},
      {"id": 2, "database_id": 12, "title": "other database"},
      {"id": 3, "database_id": "999", "title": "string database id"},
      {"id": 1, "database_id": 999, "title": "duplicate"},
      {"id": "1", "database_id": 999, "title": "a string id is another widget"},
      {"id": 4, "title": "no database"},
      {"id": 5, "database_id": 999, "content_id": 70},
      {"id": 6, "database_id": 999, "content_id": 71},
      {"id": 7, "database_id": 999, "content_id": 0, "raw_text": "replaced"}],
    "TextBox": [{"id": 70, "text_data": {"document": {"nodes": [
      {"object": "text", "leaves": [{"text": "Note"}]}]}}}]})",
                "GET https://h/welcome/remaining_widgets");
  std::set<std::string> seen;
  std::vector<PeriscopeChart> charts;
  auto count = ReadPeriscopeWidgets(page, 999, seen, charts);
  ASSERT_TRUE(count.has_value()) << count.error().message();
  EXPECT_EQ(*count, 9u);
  std::vector<std::string> ids;
  for (const auto& chart : charts) ids.push_back(chart.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"1", "3", "1", "5", "6", "7"}));
  EXPECT_EQ(charts[0].json, R"({"id":1,"database_id":999,"title":"a","raw_text":null})");
  EXPECT_EQ(Parse(charts[3].json).GetString("raw_text"), "Note");
  // A textbox that is not in the page leaves raw_text null (logged).
  EXPECT_TRUE(Parse(charts[4].json).Find("raw_text")->is_null());
  // raw_text keeps its place when the widget already had one.
  EXPECT_EQ(charts[5].json, R"({"id":7,"database_id":999,"content_id":0,"raw_text":null})");

  // The ids seen carry over to the dashboard's next window.
  JsonPage next(R"({"Widget": [{"id": 1, "database_id": 999}, {"id": 8, "database_id": 999}]})",
                "GET next");
  charts.clear();
  ASSERT_EQ(*ReadPeriscopeWidgets(next, 999, seen, charts), 2u);
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0].id, "8");
}

TEST(PeriscopeWidgetsTest, PagesWithoutWidgetsAndBrokenPages) {
  std::set<std::string> seen;
  std::vector<PeriscopeChart> charts;
  EXPECT_EQ(*ReadPeriscopeWidgets(JsonPage(R"({"Widget": []})", "GET a"), 1, seen, charts), 0u);
  EXPECT_EQ(*ReadPeriscopeWidgets(JsonPage(R"({"TextBox": []})", "GET b"), 1, seen, charts), 0u);
  EXPECT_EQ(*ReadPeriscopeWidgets(JsonPage(R"({"Widget": null})", "GET c"), 1, seen, charts), 0u);
  EXPECT_FALSE(ReadPeriscopeWidgets(JsonPage(R"({"Widget": {"id": 1}})", "GET d"), 1, seen, charts)
                   .has_value());
  EXPECT_FALSE(ReadPeriscopeWidgets(JsonPage(R"({"Widget": [{"id": )", "GET e"), 1, seen, charts)
                   .has_value());
  EXPECT_FALSE(ReadPeriscopeWidgets(JsonPage(R"({"Widget": [{"database_id": 1}]})", "GET f"), 1,
                                    seen, charts)
                   .has_value());
  EXPECT_TRUE(charts.empty());
}

}  // namespace
}  // namespace bizon
