// bigquery_streaming_v2: rows appended with the Storage Write API (protobuf rows on the default
// stream). Declared only: the factory is null until the destination is built.
#include <vector>

#include "bizon/config_spec.h"
#include "connectors/destinations/bigquery_common/bigquery_config_fields.h"
#include "connectors/registration.h"

namespace bizon {
namespace {

std::vector<FieldSpec> BigqueryStreamingV2Fields() {
  std::vector<FieldSpec> fields = BigqueryDatasetFields();
  const std::vector<FieldSpec> own = {
      BigqueryTimePartitioningField(/*nullable=*/true),
      BigqueryEnforcePartitioningField(),
      BigqueryAuthenticationField(),
      BigqueryMaxRowsPerRequestField(),
      BigqueryRecordSchemasField(),
      BigqueryTablePrefixField(),
  };
  fields.insert(fields.end(), own.begin(), own.end());
  return fields;
}

}  // namespace

Status RegisterBigqueryStreamingV2Destination(ConnectorRegistry& registry) {
  return registry.AddDestination({
      .name = "bigquery_streaming_v2",
      .description = "BigQuery through the Storage Write API, with staging tables published by "
                     "SQL on full refresh and incremental runs.",
      .alias = "bigquery",
      .config = {.fields = BigqueryStreamingV2Fields(), .unknown_keys = UnknownKeys::kError},
      .supports_reset = true,
      .check_pipeline = CheckStreamTableIds,
      .factory = nullptr,
  });
}

}  // namespace bizon
