// The rest_api source's options, declared once as data (rest_api_spec.cc): the `endpoints` form
// (one endpoint per stream) and the `resources` form (several resources per pipeline, parents and
// children), and the readers that turn a validated `source:` block into endpoint specs.
#pragma once

#include <string>
#include <vector>

#include "bizon/config_spec.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "connectors/sources/rest_api/rest_endpoint.h"

namespace bizon {

/// Everything under `source:` beside the common keys.
ConfigSpec RestApiConfig();

/// One `resources` entry as declared with its defaults: what OptionReader reads a resource with,
/// once `resource_defaults` is merged into it (the list items themselves are declared without
/// defaults, so that a default never hides a `resource_defaults` value).
const FieldSpec& ResourceDeclaration();

/// The entries of a params or headers block, as text. A value written under a credential's name
/// (`api_key: ...`, `X-Api-Key`) is registered with the secret mask.
QueryParams ParamsOf(const Value* map);

/// A validated `pagination` block (null: none).
Result<PaginationSpec> PaginationOf(const Value* block);

/// A validated `incremental` block; `source` gives the default cursor_field.
IncrementalSpec IncrementalOf(const Value& block, const Value& source);

/// The `endpoints` entry `stream` of a validated source block.
Result<EndpointSpec> EndpointOf(const Value& source, const std::string& stream);

}  // namespace bizon
