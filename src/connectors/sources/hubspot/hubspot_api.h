// The parts of the hubspot source that need no network: reading HubSpot CRM v3 pages (objects,
// properties), choosing the properties to request, and walking the search endpoint's run window
// past its 10,000-result cap.
//
// The search window: an incremental run asks POST /crm/v3/objects/<object>/search for the objects
// whose modification time is in [last run, this run's start), oldest first, 200 per page. HubSpot
// answers at most 10,000 results for one query, so once a window has handed over that many the
// query is started again from the newest modification time read so far (GTE), skipping the ids
// already read at exactly that time. Only a window of more than 10,000 objects modified in one
// millisecond cannot move; that fails with an error saying so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"
#include "bizon/value.h"
#include "http/json_page.h"

namespace bizon {

/// Results one search query can reach (HubSpot refuses to page past them).
inline constexpr int64_t kHubspotSearchResultCap = 10'000;
/// The search endpoint's largest `limit`.
inline constexpr int64_t kHubspotSearchPageSize = 200;
/// The list endpoint's page size, as the original asks.
inline constexpr int64_t kHubspotListPageSize = 100;

/// The property a "modified since" search filters and sorts on: contacts call it
/// lastmodifieddate, the other objects hs_lastmodifieddate.
std::string_view HubspotModifiedProperty(std::string_view object);

/// The `name` of each entry of a GET /crm/v3/properties/<object> answer's `results`.
Result<std::vector<std::string>> ParseHubspotPropertyNames(const JsonPage& page);

/// The properties to request: every available one (`all`), or the selected ones, each of which
/// must be available. An empty outcome fails.
Result<std::vector<std::string>> SelectHubspotProperties(const std::vector<std::string>& available,
                                                         std::string_view strategy,
                                                         const std::vector<std::string>& selected);

struct HubspotObject {
  std::string id;
  /// The object as HubSpot sent it: the record's data.
  std::string json;
  /// Milliseconds since the epoch of properties.<modified property>, else of updatedAt; nullopt
  /// when neither parses.
  std::optional<int64_t> modified_ms;
};

/// One page of GET /crm/v3/objects/<object> or of its search.
struct HubspotObjectPage {
  std::vector<HubspotObject> objects;
  /// paging.next.after and paging.next.link; unset on the last page.
  std::optional<std::string> next_after;
  std::optional<std::string> next_link;
  /// A search's `total`: how many objects match the query.
  std::optional<int64_t> total;
};

/// Reads `results` (an absent or null array is an empty page) and `paging.next`. A result
/// without a string `id` fails.
Result<HubspotObjectPage> ParseHubspotObjectPage(const JsonPage& page,
                                                 std::string_view modified_property);

/// Where an incremental read is in its run window; carried as the iteration's pagination.
struct HubspotSearchCursor {
  /// The window's lower bound (GTE), milliseconds since the epoch.
  int64_t lower_ms = 0;
  /// The search's paging token within the current window.
  std::optional<std::string> after;
  /// Results the current window's query has handed over so far.
  int64_t read_in_window = 0;
  /// The newest modification time read so far, and the ids read at exactly that time.
  std::optional<int64_t> tail_ms;
  std::vector<std::string> tail_ids;
  /// Ids at `lower_ms` the previous window already emitted.
  std::vector<std::string> skip_ids;

  Value ToValue() const;
  /// The cursor of a pagination map; an empty map starts a window at `lower_ms`.
  static Result<HubspotSearchCursor> FromValue(const Value& pagination, int64_t lower_ms);
};

/// The JSON body of one search request of the window [cursor.lower_ms, upper_ms).
std::string HubspotSearchBody(const HubspotSearchCursor& cursor, int64_t upper_ms,
                              std::string_view modified_property,
                              const std::vector<std::string>& properties, int64_t limit);

struct HubspotSearchStep {
  /// The page's objects, less those the previous window emitted.
  std::vector<HubspotObject> emit;
  /// The cursor of the next request; nullopt when the window is exhausted.
  std::optional<HubspotSearchCursor> next;
};

/// Folds one search page into the cursor: the next page of the same query, or, when the next page
/// would pass `cap` results (or the query stops at the cap with `total` saying there are more), a
/// new query from the newest modification time read.
Result<HubspotSearchStep> AdvanceHubspotSearch(const HubspotSearchCursor& cursor,
                                               HubspotObjectPage page, int64_t limit,
                                               int64_t cap = kHubspotSearchResultCap);

/// `policyName` of a HubSpot error body ("DAILY", "TEN_SECONDLY_ROLLING", ...); empty when the
/// body is not such an error.
std::string HubspotRateLimitPolicy(std::string_view body);

/// A HubSpot error body in one line, "<category> <policyName>: <message>" (parts present only);
/// empty when the body is not HubSpot's error shape.
std::string HubspotErrorSummary(std::string_view body);

}  // namespace bizon
