// Renders the declared options as a Markdown reference (docs/reference/config.md).
#pragma once

#include <string>

#include "config/pipeline_spec.h"

namespace bizon {

std::string RenderConfigReference(const PipelineDeclaration& declaration);

}  // namespace bizon
