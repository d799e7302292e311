#include "connectors/sources/notion/notion_markdown.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

Value Block(std::string_view json) {
  auto parsed = Value::FromJson(json);
  EXPECT_TRUE(parsed.has_value());
  return parsed ? *parsed : Value();
}

TEST(NotionMarkdownTest, RichTextAnnotationsNestInOrder) {
  Value rich = Block(R"([
    {"plain_text": "a", "annotations": {"bold": true, "italic": true}, "href": null},
    {"plain_text": "b", "annotations": {"code": true, "strikethrough": true}},
    {"plain_text": "c", "annotations": {}, "href": "https://x"}])");
  EXPECT_EQ(NotionRichText(rich), "***a***~~`b`~~[c](https://x)");
  EXPECT_EQ(NotionRichText(Value()), "");
}

TEST(NotionMarkdownTest, BlockTypes) {
  auto md = [](std::string_view json) { return NotionBlockToMarkdown(Block(json)); };
  EXPECT_EQ(md(R"({"type": "heading_2", "heading_2": {"rich_text": [{"plain_text": "T"}]}})"),
            "## T");
  EXPECT_EQ(md(R"({"type": "numbered_list_item",
                   "numbered_list_item": {"rich_text": [{"plain_text": "n"}]}})"),
            "1. n");
  EXPECT_EQ(md(R"({"type": "to_do", "to_do": {"checked": true, "rich_text": []}})"), "- [x] ");
  EXPECT_EQ(md(R"({"type": "callout", "callout": {"rich_text": [{"plain_text": "c"}]}})"), "> 💡 c");
  EXPECT_EQ(md(R"({"type": "code", "code": {"language": "sql",
                   "rich_text": [{"plain_text": "select 1"}]}})"),
            "```sql\nselect 1\n```");
  EXPECT_EQ(md(R"({"type": "toggle", "toggle": {"rich_text": [{"plain_text": "t"}]}})"),
            "<details><summary>t</summary></details>");
  EXPECT_EQ(md(R"({"type": "file", "file": {"caption": [], "file": {"url": "u"}}})"), "[File](u)");
  EXPECT_EQ(md(R"({"type": "video", "video": {"external": {"url": "v"}}})"), "[Video](v)");
  EXPECT_EQ(md(R"({"type": "pdf", "pdf": {"file": {"url": "p"}}})"), "[PDF](p)");
  EXPECT_EQ(md(R"({"type": "embed", "embed": {"url": "e"}})"), "[Embed](e)");
  EXPECT_EQ(md(R"({"type": "link_preview", "link_preview": {"url": "l"}})"), "[Link Preview](l)");
  EXPECT_EQ(md(R"({"type": "child_page", "child_page": {"title": ""}})"), "[Page: Untitled]");
  EXPECT_EQ(md(R"({"type": "child_database", "child_database": {"title": "DB"}})"),
            "[Database: DB]");
  EXPECT_EQ(md(R"({"type": "link_to_page", "link_to_page": {"database_id": "d1"}})"),
            "[Link to page: d1]");
  EXPECT_EQ(md(R"({"type": "table_of_contents", "table_of_contents": {}})"), "[Table of Contents]");
  EXPECT_EQ(md(R"({"type": "breadcrumb", "breadcrumb": {}})"), "[Breadcrumb]");
  EXPECT_EQ(md(R"({"type": "template", "template": {}})"), "[Template]");
  EXPECT_EQ(md(R"({"type": "column_list", "column_list": {}})"), "");
  EXPECT_EQ(md(R"({"type": "audio", "audio": {}})"), "[Unsupported block type: audio]");
}

}  // namespace
}  // namespace bizon
