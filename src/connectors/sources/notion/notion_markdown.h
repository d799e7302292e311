// Markdown for one Notion block, as the original's blocks_markdown streams render it: a single
// line (or fenced code) per block, children rendered as their own records.
#pragma once

#include <string>

#include "bizon/value.h"

namespace bizon {

/// Concatenated rich text, each item's plain_text wrapped by its annotations (code, bold, italic,
/// strikethrough, in that order) and then by its link.
std::string NotionRichText(const Value& rich_text);

/// The markdown of `block` (a Notion block object); unknown types give
/// "[Unsupported block type: <type>]".
std::string NotionBlockToMarkdown(const Value& block);

}  // namespace bizon
