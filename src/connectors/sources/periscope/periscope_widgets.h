// The parsing side of the periscope source: record ids, and the charts stream's reading of one
// /welcome/remaining_widgets page (widgets filtered on a database, de-duplicated, each given the
// text of its textbox). No HTTP here, so the unit tests feed pages directly.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"
#include "bizon/value.h"
#include "http/json_page.h"

namespace bizon {

/// The record id the original gives an item: its `id`, an integer (as decimal text) or a string.
/// Anything else fails as a source error naming `origin` and the item's position.
Result<std::string> PeriscopeRecordId(const std::optional<Value>& id, std::string_view origin,
                                      size_t index);

/// The text of a textbox (its Slate `text_data`): the leaves of text nodes (BOM removed,
/// trimmed), a link node as `[text](url)`, other nodes descended into; the parts joined by one
/// space. Null or empty `text_data` gives "".
std::string PeriscopeTextboxText(const Value& textbox);

struct PeriscopeChart {
  std::string id;
  std::string json;  // The widget with `raw_text` set.
};

/// Reads one page of a dashboard's widgets: appends to `charts` each widget whose `database_id`
/// reads as `database_id` and whose id is not in `seen` yet (then added to it). Returns how many
/// widgets the page had, matching or not (0 ends the dashboard). A page without `Widget` has
/// none; a page that is not JSON, or a widget without an id, fails.
Result<size_t> ReadPeriscopeWidgets(const JsonPage& page, int64_t database_id,
                                    std::set<std::string>& seen,
                                    std::vector<PeriscopeChart>& charts);

}  // namespace bizon
