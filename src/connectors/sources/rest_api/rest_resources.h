// The `resources` form of the rest_api source: several resources read in one run, each into its
// own destination id, and children whose requests are made from their parent's records.
//
// A child names its parent through placeholders: `{resources.<parent>.<field>}` in its path,
// params, headers or body, or a param `{type: resolve, resource: <parent>, field: <field>}`
// (sent in the path when the path holds `{<param name>}`, else in the query). One request (and
// its pages) is made per parent record; `include_from_parent` copies parent fields into each
// child record as `_<parent>_<field>`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/config_spec.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "connectors/sources/rest_api/rest_endpoint.h"

namespace bizon {

struct ResourceSpec {
  std::string name;
  /// `url`, `params`, `headers` and `body` may hold placeholders.
  EndpointSpec endpoint;
  /// No record_selector: each page's records are found by DetectRecordSelector().
  bool detect_records = false;
  std::string destination_id;
  /// Index of the parent in the resource list; unset for a top-level resource.
  std::optional<size_t> parent;
  /// Fields of the parent record this resource reads (placeholders, then include_from_parent).
  std::vector<std::string> parent_fields;
  std::vector<std::string> include_from_parent;
  /// Indexes of its children.
  std::vector<size_t> children;
  /// Requests in flight at once (the `parallel` option).
  int64_t parallel = 1;
  std::vector<ResponseAction> response_actions;
  /// The resource's own `auth` block, if any.
  std::optional<Value> auth;
};

/// The resources of a validated source block, `resource_defaults` merged into each, in the
/// order declared. Fails on what CheckResources() reports.
Result<std::vector<ResourceSpec>> ReadResources(const Value& source);

/// The rules across a resources block that its declaration cannot express: unique names, a path
/// for each, placeholders naming one declared parent (no cycle), include_from_parent only on a
/// child, body paging only with POST, a way to stop when empty pages do not. Paths are relative
/// to `source` ("resources[1].path").
std::vector<ConfigRuleViolation> CheckResources(const Value& source);

/// `text` with each `{resources.<parent>.<field>}` replaced by the field's value in
/// `parent_values` ({field: value}), percent-encoded when `for_url`. A field it lacks fails.
Result<std::string> ResolvePlaceholders(std::string_view text, const Value& parent_values,
                                        bool for_url);

/// `value` with ResolvePlaceholders applied to every string inside it (a JSON body).
Result<Value> ResolveBodyPlaceholders(const Value& value, const Value& parent_values);

}  // namespace bizon
