#pragma once

// The optional connector families (CMake's BIZON_WITH_* options) and whether this binary was built
// with each. A part of a family left out is refused by name, with the option that builds it,
// wherever a pipeline asks for it (a connector, a backend, a queue, a transform).

#include <span>
#include <string>
#include <string_view>

#include "bizon/status.h"

namespace bizon {

struct ConnectorFamily {
  std::string_view name;    // "kafka"
  std::string_view option;  // "BIZON_WITH_KAFKA"
  bool built;
};

/// Every family, in a fixed order.
std::span<const ConnectorFamily> ConnectorFamilies();

/// The family named `name`; nullptr for another name.
const ConnectorFamily* FindConnectorFamily(std::string_view name);

/// "with kafka, bigquery, ...; without python" (the families built, then those left out), for
/// `bizon --version`.
std::string DescribeConnectorFamilies();

/// The refusal of `what` ("the 'postgres' backend") of a family left out of this build: code
/// kUnimplemented, failure class config, naming the CMake option that builds it.
Status NotBuiltError(std::string_view what, std::string_view family);

}  // namespace bizon
