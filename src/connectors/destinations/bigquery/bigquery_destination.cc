// bigquery: batch loads through Parquet files staged in Google Cloud Storage, published with copy
// jobs. Declared only: the factory is null until the destination is built.
#include <vector>

#include "bizon/config_spec.h"
#include "connectors/destinations/bigquery_common/bigquery_config_fields.h"
#include "connectors/registration.h"

namespace bizon {
namespace {

std::vector<FieldSpec> BigqueryFields() {
  std::vector<FieldSpec> fields = BigqueryDatasetFields();
  const std::vector<FieldSpec> own = {
      {.name = "create_dataset",
       .type = FieldType::kBoolean,
       .description = "Create the dataset on the first write when it is missing, instead of "
                      "failing.",
       .nullable = false,
       .default_value = false},
      {.name = "gcs_buffer_bucket",
       .type = FieldType::kString,
       .description = "Cloud Storage bucket where each flush is staged before it is loaded.",
       .required = true,
       .nullable = false,
       .example = "my-bizon-buffer"},
      {.name = "gcs_buffer_format",
       .type = FieldType::kEnum,
       .description = "File format of the staged files; only parquet is implemented.",
       .nullable = false,
       .default_value = "parquet",
       .enum_values = {"parquet", "csv"}},
      BigqueryTimePartitioningField(/*nullable=*/false),
      BigqueryEnforcePartitioningField(),
      {.name = "async_load",
       .type = FieldType::kBoolean,
       .description = "Submit load jobs without waiting for them and batch several staged files "
                      "per job; cursors are written once a job lands.",
       .nullable = false,
       .default_value = false},
      {.name = "load_files_per_job",
       .type = FieldType::kInteger,
       .description = "Staged files gathered into one load job when async_load is on.",
       .nullable = false,
       .default_value = 10,
       .minimum = 1},
      {.name = "load_max_in_flight_jobs",
       .type = FieldType::kInteger,
       .description = "Load jobs allowed to run at once when async_load is on; a flush waits "
                      "for the oldest beyond that.",
       .nullable = false,
       .default_value = 3,
       .minimum = 1},
      BigqueryRecordSchemasField(),
      BigqueryTablePrefixField(),
      BigqueryAuthenticationField(),
  };
  fields.insert(fields.end(), own.begin(), own.end());
  return fields;
}

}  // namespace

Status RegisterBigqueryDestination(ConnectorRegistry& registry) {
  return registry.AddDestination({
      .name = "bigquery",
      .description = "BigQuery through Parquet files staged in Cloud Storage, loaded by load "
                     "jobs and published with copy jobs.",
      .alias = "bigquery",
      .config = {.fields = BigqueryFields(), .unknown_keys = UnknownKeys::kError},
      .supports_reset = true,
      .factory = nullptr,
  });
}

}  // namespace bizon
