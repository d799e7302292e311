#include "connectors/destinations/destination_options.h"

#include "common/destination_fields.h"

namespace bizon {

CommonDestinationOptions ReadCommonDestinationOptions(const Value& config) {
  OptionReader options(Option::Object("config", CommonDestinationFields()), config);
  CommonDestinationOptions common;
  common.destination_id = StringOrEmpty(options, "destination_id");
  common.unnest = options.Boolean("unnest");
  common.max_concurrent_threads = options.Integer("max_concurrent_threads");
  // A reader of an undeclared key is a bug of this file, caught by its tests.
  options.status().IgnoreError();
  return common;
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
