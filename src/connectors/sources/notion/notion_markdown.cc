#include "connectors/sources/notion/notion_markdown.h"

#include <fmt/format.h>

namespace bizon {
namespace {

const Value& Field(const Value& object, std::string_view key) {
  static const Value kNull;
  const Value* found = object.Find(key);
  return found != nullptr ? *found : kNull;
}

std::string Text(const Value& value) { return value.is_string() ? value.AsString() : ""; }

// The URL of a file-like block: external.url or file.url.
std::string FileUrl(const Value& content) {
  std::string url = Text(Field(Field(content, "external"), "url"));
  if (url.empty()) url = Text(Field(Field(content, "file"), "url"));
  return url;
}

}  // namespace

std::string NotionRichText(const Value& rich_text) {
  std::string out;
  if (!rich_text.is_list()) return out;
  for (const Value& item : rich_text.AsList()) {
    std::string text = Text(Field(item, "plain_text"));
    const Value& annotations = Field(item, "annotations");
    if (annotations.GetBool("code")) text = fmt::format("`{}`", text);
    if (annotations.GetBool("bold")) text = fmt::format("**{}**", text);
    if (annotations.GetBool("italic")) text = fmt::format("*{}*", text);
    if (annotations.GetBool("strikethrough")) text = fmt::format("~~{}~~", text);
    std::string href = Text(Field(item, "href"));
    if (!href.empty()) text = fmt::format("[{}]({})", text, href);
    out += text;
  }
  return out;
}

std::string NotionBlockToMarkdown(const Value& block) {
  std::string type = block.GetString("type");
  const Value& content = Field(block, type);
  auto rich = [&] { return NotionRichText(Field(content, "rich_text")); };
  auto caption = [&] { return NotionRichText(Field(content, "caption")); };

  if (type == "paragraph") return rich();
  if (type == "heading_1") return "# " + rich();
  if (type == "heading_2") return "## " + rich();
  if (type == "heading_3") return "### " + rich();
  if (type == "bulleted_list_item") return "- " + rich();
  if (type == "numbered_list_item") return "1. " + rich();
  if (type == "to_do") return (content.GetBool("checked") ? "- [x] " : "- [ ] ") + rich();
  if (type == "quote") return "> " + rich();
  if (type == "callout") {
    std::string emoji = Text(Field(Field(content, "icon"), "emoji"));
    return fmt::format("> {} {}", emoji.empty() ? "💡" : emoji, rich());
  }
  if (type == "code") {
    return fmt::format("```{}\n{}\n```", Text(Field(content, "language")), rich());
  }
  if (type == "equation") return fmt::format("$$ {} $$", Text(Field(content, "expression")));
  if (type == "divider") return "---";
  if (type == "toggle") return fmt::format("<details><summary>{}</summary></details>", rich());
  if (type == "image") return fmt::format("![{}]({})", caption(), FileUrl(content));
  if (type == "video") return fmt::format("[Video]({})", FileUrl(content));
  if (type == "file") {
    std::string label = caption();
    return fmt::format("[{}]({})", label.empty() ? "File" : label, FileUrl(content));
  }
  if (type == "pdf") return fmt::format("[PDF]({})", FileUrl(content));
  if (type == "bookmark") {
    std::string url = Text(Field(content, "url"));
    std::string label = caption();
    return fmt::format("[{}]({})", label.empty() ? url : label, url);
  }
  if (type == "embed") return fmt::format("[Embed]({})", Text(Field(content, "url")));
  if (type == "link_preview") return fmt::format("[Link Preview]({})", Text(Field(content, "url")));
  if (type == "table") return "[Table - see child blocks for rows]";
  if (type == "table_row") {
    std::string row = "|";
    const Value& cells = Field(content, "cells");
    if (cells.is_list()) {
      for (const Value& cell : cells.AsList()) row += " " + NotionRichText(cell) + " |";
    }
    return row;
  }
  if (type == "child_page" || type == "child_database") {
    std::string title = Text(Field(content, "title"));
    return fmt::format("[{}: {}]", type == "child_page" ? "Page" : "Database",
                       title.empty() ? "Untitled" : title);
  }
  if (type == "link_to_page") {
    std::string target = Text(Field(content, "page_id"));
    if (target.empty()) target = Text(Field(content, "database_id"));
    return fmt::format("[Link to page: {}]", target);
  }
  if (type == "table_of_contents") return "[Table of Contents]";
  if (type == "breadcrumb") return "[Breadcrumb]";
  if (type == "synced_block") return "[Synced Block]";
  if (type == "template") return "[Template]";
  if (type == "column_list" || type == "column") return "";
  return fmt::format("[Unsupported block type: {}]", type);
}

}  // namespace bizon
