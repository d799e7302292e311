#include "connectors/sources/periscope/periscope_widgets.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>

namespace bizon {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

// The whitespace Python's str.strip() removes, as UTF-8 sequences: the original trims leaves
// with it, and rich text often ends in a no-break space.
constexpr std::array<std::string_view, 29> kWhitespace = {" ",
                                                          "\t",
                                                          "\n",
                                                          "\v",
                                                          "\f",
                                                          "\r",
                                                          "\x1C",
                                                          "\x1D",
                                                          "\x1E",
                                                          "\x1F",
                                                          "\xC2\x85",
                                                          "\xC2\xA0",
                                                          "\xE1\x9A\x80",
                                                          "\xE2\x80\x80",
                                                          "\xE2\x80\x81",
                                                          "\xE2\x80\x82",
                                                          "\xE2\x80\x83",
                                                          "\xE2\x80\x84",
                                                          "\xE2\x80\x85",
                                                          "\xE2\x80\x86",
                                                          "\xE2\x80\x87",
                                                          "\xE2\x80\x88",
                                                          "\xE2\x80\x89",
                                                          "\xE2\x80\x8A",
                                                          "\xE2\x80\xA8",
                                                          "\xE2\x80\xA9",
                                                          "\xE2\x80\xAF",
                                                          "\xE2\x81\x9F",
                                                          "\xE3\x80\x80"};

size_t WhitespacePrefix(std::string_view text) {
  for (std::string_view space : kWhitespace) {
    if (text.starts_with(space)) return space.size();
  }
  return 0;
}

size_t WhitespaceSuffix(std::string_view text) {
  for (std::string_view space : kWhitespace) {
    if (text.ends_with(space)) return space.size();
  }
  return 0;
}

// The original's clean_text: every BOM removed, then whitespace trimmed at both ends.
std::string CleanText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    if (text.substr(at).starts_with(kByteOrderMark)) {
      at += kByteOrderMark.size();
      continue;
    }
    out.push_back(text[at++]);
  }
  std::string_view view = out;
  while (size_t n = WhitespacePrefix(view)) view.remove_prefix(n);
  while (size_t n = WhitespaceSuffix(view)) view.remove_suffix(n);
  return std::string(view);
}

const Value::List& ListAt(const Value& node, std::string_view key) {
  static const Value::List kEmpty;
  const Value* list = node.is_map() ? node.Find(key) : nullptr;
  return list != nullptr && list->is_list() ? list->AsList() : kEmpty;
}

std::string LeafText(const Value& leaf) {
  const Value* text = leaf.is_map() ? leaf.Find("text") : nullptr;
  if (text == nullptr || text->is_null()) return "";
  return CleanText(text->is_string() ? text->AsString() : text->ToDisplayString());
}

void CollectText(const Value::List& nodes, std::vector<std::string>& parts) {
  for (const Value& node : nodes) {
    if (!node.is_map()) continue;
    const Value* url = nullptr;
    if (const Value* data = node.Find("data"); data != nullptr && data->is_map()) {
      url = data->Find("url");
    }
    if (node.GetString("object") == "text") {
      for (const Value& leaf : ListAt(node, "leaves")) parts.push_back(LeafText(leaf));
    } else if (node.GetString("type") == "link" && url != nullptr) {
      // The link's text is its first child's leaves, as in the original.
      std::string text;
      const Value::List& children = ListAt(node, "nodes");
      if (!children.empty()) {
        for (const Value& leaf : ListAt(children.front(), "leaves")) text += LeafText(leaf);
      }
      std::string target = url->is_string() ? url->AsString() : url->ToDisplayString();
      parts.push_back(fmt::format("[{}]({})", text, target));
    } else if (node.Find("nodes") != nullptr) {
      CollectText(ListAt(node, "nodes"), parts);
    }
  }
}

// Python's truthiness, for `if chart.get("content_id")`.
bool Truthy(const Value* value) {
  if (value == nullptr || value->is_null()) return false;
  if (value->is_bool()) return value->AsBool();
  if (value->is_integer()) return value->AsInteger() != 0;
  if (value->is_number()) return value->AsDouble() != 0;
  if (value->is_string()) return !value->AsString().empty();
  if (value->is_list()) return !value->AsList().empty();
  return !value->AsMap().empty();
}

}  // namespace

Result<std::string> PeriscopeRecordId(const std::optional<Value>& id, std::string_view origin,
                                      size_t index) {
  if (id && id->is_integer()) return std::to_string(id->AsInteger());
  if (id && id->is_string()) return id->AsString();
  return Fail(Status(StatusCode::kFailedPrecondition,
                     fmt::format("a Periscope item has no id (an integer or a string): item {} "
                                 "of the response of {}",
                                 index, origin),
                     FailureClass::kSource));
}

std::string PeriscopeTextboxText(const Value& textbox) {
  const Value* text_data = textbox.is_map() ? textbox.Find("text_data") : nullptr;
  if (!Truthy(text_data) || !text_data->is_map()) return "";
  const Value* document = text_data->Find("document");
  if (document == nullptr) return "";
  std::vector<std::string> parts;
  CollectText(ListAt(*document, "nodes"), parts);
  return fmt::format("{}", fmt::join(parts, " "));
}

Result<size_t> ReadPeriscopeWidgets(const JsonPage& page, int64_t database_id,
                                    std::set<std::string>& seen,
                                    std::vector<PeriscopeChart>& charts) {
  BIZON_ASSIGN_OR_RETURN(std::optional<Value> widgets, page.Find("Widget"));
  if (!widgets || widgets->is_null()) return 0;
  if (!widgets->is_list()) {
    return Fail(Status(StatusCode::kFailedPrecondition,
                       fmt::format("'Widget' is not a list in the response of {}", page.origin()),
                       FailureClass::kSource));
  }
  BIZON_ASSIGN_OR_RETURN(std::optional<Value> textboxes, page.Find("TextBox"));
  const std::string wanted = std::to_string(database_id);
  size_t index = 0;
  for (Value& widget : widgets->AsList()) {
    size_t position = index++;
    if (!widget.is_map()) continue;
    // The original compares str(database_id) with the configured one.
    const Value* database = widget.Find("database_id");
    if (database == nullptr) continue;
    bool same = database->is_integer()  ? std::to_string(database->AsInteger()) == wanted
                : database->is_string() ? database->AsString() == wanted
                                        : false;
    if (!same) continue;
    const Value* id_value = widget.Find("id");
    BIZON_ASSIGN_OR_RETURN(
        std::string id, PeriscopeRecordId(id_value ? std::optional<Value>(*id_value) : std::nullopt,
                                          page.origin(), position));
    // De-duplicated on the id as sent: 7 and "7" are two widgets, as in the original's set.
    if (!seen.insert(id_value->ToJson()).second) continue;

    Value raw_text;
    const Value* content_id = widget.Find("content_id");
    if (Truthy(content_id)) {
      const Value* textbox = nullptr;
      if (textboxes && textboxes->is_list()) {
        for (const Value& candidate : textboxes->AsList()) {
          const Value* candidate_id = candidate.is_map() ? candidate.Find("id") : nullptr;
          if (candidate_id != nullptr && *candidate_id == *content_id) {
            textbox = &candidate;
            break;
          }
        }
      }
      if (textbox != nullptr) {
        raw_text = Value(PeriscopeTextboxText(*textbox));
      } else {
        spdlog::error("Failed to find the textbox with id {} for the chart with id {}",
                      content_id->ToDisplayString(), id);
      }
    }
    widget.Set("raw_text", std::move(raw_text));
    charts.push_back({std::move(id), widget.ToJson()});
  }
  return widgets->AsList().size();
}

}  // namespace bizon
