// The customers query of the Cycle GraphQL API and the reading of its answers, apart from the
// HTTP so the unit tests can feed it pages.
//
// One request per page: POST {"query": <text>, "variables": {"slug": <slug>}}. The page's position
// goes into the query text (`where: {cursor, direction: AFTER}`), as the original connector
// builds it, and the pagination kept between pages is the answer's whole `pageInfo` object.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "bizon/source.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "http/json_page.h"

namespace bizon {

/// Customers per page, as the original asks.
inline constexpr int64_t kCycleCustomersPageSize = 100;

/// The query text: the first page when `end_cursor` is empty, else the page after it.
std::string CycleCustomersQuery(std::string_view end_cursor);

/// The JSON body of the request for the page after `pagination` (an empty map: the first page;
/// else the previous answer's pageInfo, read for its `endCursor`).
std::string CycleCustomersRequestBody(std::string_view slug, const Value& pagination);

/// The records of one answer (id = node.id, data = the node) and the next pagination: the
/// `pageInfo` object while `hasNextPage` is true, else an empty map. GraphQL `errors`, an unknown
/// product and an answer without the customers connection are source errors naming `slug` and
/// the answer's origin.
Result<SourceIteration> ReadCycleCustomersPage(const JsonPage& page, std::string_view slug,
                                               int64_t extracted_at_us);

}  // namespace bizon
