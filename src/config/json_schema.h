// Renders a FieldSpec as JSON Schema (draft 2020-12) for editors and CI checks.
#pragma once

#include "bizon/config_spec.h"
#include "bizon/value.h"

namespace bizon {

Value ToJsonSchema(const FieldSpec& root);

}  // namespace bizon
