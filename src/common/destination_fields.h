#pragma once

// The keys every destination's `destination.config` block has beside its own (buffer_size, unnest,
// record_schemas, ...): declared once, here, for the pipeline spec that validates the block, the
// engine that reads its buffer keys, and the destinations that read the rest.

#include <vector>

#include "bizon/config_spec.h"

namespace bizon {

/// `destination.config`'s common keys, with their defaults.
std::vector<FieldSpec> CommonDestinationFields();

/// `record_schemas`: the columns of each destination id, used when unnest is true.
FieldSpec RecordSchemasField();

}  // namespace bizon
