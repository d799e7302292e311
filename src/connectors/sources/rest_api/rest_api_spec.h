// The rest_api source's options, declared once as data (rest_api_spec.cc): the `endpoints` form
// (one endpoint per stream) and the `resources` form (several resources per pipeline, parents and
// children), and the readers that turn a validated `source:` block into endpoint specs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bizon/config_spec.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "connectors/sources/rest_api/rest_endpoint.h"

namespace bizon {

/// Everything under `source:` beside the common keys.
ConfigSpec RestApiConfig();

/// RestApiConfig() as the object a `source:` block is read against.
const FieldSpec& RestApiDeclaration();

/// One `resources` entry as declared with its defaults: what OptionReader reads a resource with,
/// once `resource_defaults` is merged into it (the list items themselves are declared without
/// defaults, so that a default never hides a `resource_defaults` value).
const FieldSpec& ResourceDeclaration();

/// A resource's `auth` block as declared (bearer, api_key, basic).
const FieldSpec& ResourceAuthDeclaration();

/// An option declared without a default, whose absence means "not used" (has_more_path,
/// end_param): its text, else empty.
std::string TextIfSet(OptionReader& options, std::string_view name);

/// The entries of a params or headers block, as text. A value written under a credential's name
/// (`api_key: ...`, `X-Api-Key`) is registered with the secret mask.
QueryParams ParamsOf(const Value* map);

/// A `pagination` block, read against its declaration (the variant its `type` selects).
Result<PaginationSpec> PaginationOf(OptionReader block);

/// An `incremental` block of the endpoints form: its window. Without a cursor_field of its own
/// it takes `source_cursor_field` (source.cursor_field).
IncrementalSpec WindowOf(OptionReader& block, const std::string& source_cursor_field);

/// An `incremental` block of the resources form: its window, range, lag, row order and what to
/// do without a cursor value.
IncrementalSpec ResourceIncrementalOf(OptionReader block, const std::string& source_cursor_field);

/// A resource's `response_actions` list (null: none), each item read against its declaration.
Result<std::vector<ResponseAction>> ResponseActionsOf(const Value* list);

/// An `endpoints` entry, as a stream of the endpoints form reads it.
struct EndpointEntry {
  EndpointSpec spec;
  /// Path of the total record count in the first page (progress only); empty: none.
  std::string total_path;
};

/// The `endpoints` entry `stream` of a validated source block.
Result<EndpointEntry> EndpointOf(const Value& source, const std::string& stream);

}  // namespace bizon
