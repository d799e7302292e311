// The keys of the common destination block (buffer_size, unnest, ...) that destinations read
// themselves, read in one place.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "bizon/config_spec.h"
#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

/// The common block's keys a destination reads, against their declaration
/// (CommonDestinationFields, common/destination_fields.h), which holds their defaults.
struct CommonDestinationOptions {
  /// `destination_id`: the default table or file; empty when unset.
  std::string destination_id;
  /// `unnest`: write the record_schemas columns instead of the raw record.
  bool unnest{};
  /// `max_concurrent_threads`: parallel writes, at least 1.
  int64_t max_concurrent_threads{};
};

/// Reads the common keys of a `destination.config` block.
CommonDestinationOptions ReadCommonDestinationOptions(const Value& config);

/// Where a destination writing database tables (postgres, duckdb) loads.
struct TableOptions {
  /// `schema`; an empty one is its declared default.
  std::string schema;
  /// `table`, else `destination_id`; empty: neither is set.
  std::string table;
  bool unnest = false;
};

/// Reads schema, table and unnest of `config` against `declaration`, the destination's block
/// (which declares `schema` with a default and `table` without one).
Result<TableOptions> ReadTableOptions(const FieldSpec& declaration, const Value& config);

/// A string option declared without a default (a required one, or one whose absence means
/// something, as duckdb's `table`): its value, else empty. A block that lacks a required one is
/// reported by the spec, or by the destination with a message of its own.
std::string StringOrEmpty(OptionReader& options, std::string_view name);

}  // namespace bizon
