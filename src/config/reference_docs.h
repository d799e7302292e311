// Renders the declared options as a Markdown reference (docs/reference/config.md).
#pragma once

#include <string>

#include "bizon/registry.h"

namespace bizon {

std::string RenderConfigReference(const ConnectorRegistry& registry);

}  // namespace bizon
