// bigquery_streaming: rows appended with the legacy streaming API (tabledata.insertAll). Declared
// only: the factory is null until the destination is built.
#include <vector>

#include "bizon/config_spec.h"
#include "connectors/destinations/bigquery_common/bigquery_config_fields.h"
#include "connectors/registration.h"

namespace bizon {
namespace {

std::vector<FieldSpec> BigqueryStreamingFields() {
  std::vector<FieldSpec> fields = BigqueryDatasetFields();
  const std::vector<FieldSpec> own = {
      BigqueryTimePartitioningField(/*nullable=*/true),
      BigqueryAuthenticationField(),
      BigqueryMaxRowsPerRequestField(),
      BigqueryRecordSchemasField(),
      BigqueryTablePrefixField(),
  };
  fields.insert(fields.end(), own.begin(), own.end());
  return fields;
}

}  // namespace

Status RegisterBigqueryStreamingDestination(ConnectorRegistry& registry) {
  return registry.AddDestination({
      .name = "bigquery_streaming",
      .description = "BigQuery through the legacy streaming insert API; every sync mode appends "
                     "to the final table.",
      .alias = "bigquery",
      .config = {.fields = BigqueryStreamingFields(), .unknown_keys = UnknownKeys::kError},
      // No staging table: a full refresh appends too, so a reset would duplicate the table.
      .supports_reset = false,
      .check_pipeline = CheckStreamTableIds,
      .factory = nullptr,
  });
}

}  // namespace bizon
