#include "connectors/destinations/destination_options.h"

namespace bizon {

CommonDestinationOptions ReadCommonDestinationOptions(const Value& config) {
  CommonDestinationOptions options;
  options.destination_id = config.GetString("destination_id");
  // The struct's defaults, which are the declaration's (see the header).
  options.unnest = config.GetBool("unnest", options.unnest);
  options.max_concurrent_threads =
      config.GetInteger("max_concurrent_threads", options.max_concurrent_threads);
  return options;
}

Result<TableOptions> ReadTableOptions(const FieldSpec& declaration, const Value& config) {
  OptionReader options(declaration, config);
  TableOptions table;
  table.schema = options.String("schema");
  if (table.schema.empty()) table.schema = OptionReader(declaration, Value()).String("schema");
  table.table = StringOrEmpty(options, "table");
  CommonDestinationOptions common = ReadCommonDestinationOptions(config);
  table.unnest = common.unnest;
  if (table.table.empty()) table.table = std::move(common.destination_id);
  BIZON_RETURN_IF_ERROR(options.status());
  return table;
}

std::string StringOrEmpty(OptionReader& options, std::string_view name) {
  const Value* value = options.Find(name);
  return value != nullptr && value->is_string() ? value->AsString() : std::string();
}

}  // namespace bizon
