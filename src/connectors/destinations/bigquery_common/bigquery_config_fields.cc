#include "connectors/destinations/bigquery_common/bigquery_config_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bizon/value.h"
#include "common/write_disposition.h"
#include "google/credentials.h"

namespace bizon {
namespace {

const std::vector<std::string> kPartitionWindows = {"DAY", "HOUR", "MONTH", "YEAR"};

const std::vector<std::string> kColumnTypes = {
    "BOOLEAN", "BYTES",   "DATE",       "DATETIME", "FLOAT",  "FLOAT64", "GEOGRAPHY", "INTEGER",
    "INT64",   "NUMERIC", "BIGNUMERIC", "JSON",     "RECORD", "STRING",  "TIME",      "TIMESTAMP",
};

Value DefaultTimePartitioning() {
  return Value(Value::Map{{"type", "DAY"}, {"field", "_bizon_loaded_at"}});
}

FieldSpec BigqueryColumnField() {
  return {
      .name = "column",
      .type = FieldType::kObject,
      .description = "One column of the table: name, BigQuery type and mode.",
      .fields =
          {
              {.name = "name",
               .type = FieldType::kString,
               .description = "Column name, also the key read from each record's payload.",
               .required = true,
               .nullable = false},
              {.name = "type",
               .type = FieldType::kEnum,
               .description = "BigQuery type of the column, in upper case.",
               .required = true,
               .nullable = false,
               .enum_values = kColumnTypes},
              {.name = "mode",
               .type = FieldType::kEnum,
               .description = "Whether the column may be null, must be set, or holds a list.",
               .required = true,
               .nullable = false,
               .enum_values = {"NULLABLE", "REQUIRED", "REPEATED"}},
              {.name = "description",
               .type = FieldType::kString,
               .description = "Column description stored in the table schema."},
              {.name = "default_value_expression",
               .type = FieldType::kString,
               .description = "SQL expression BigQuery fills the column with when a row omits "
                              "it, such as CURRENT_TIMESTAMP().",
               .example = "CURRENT_TIMESTAMP()"},
          },
      // `nullable`, `policy_tags`...: the original ignores them; warned here, not refused.
      .unknown_keys = UnknownKeys::kWarn,
  };
}

}  // namespace

std::vector<FieldSpec> BigqueryDatasetFields() {
  return {
      {.name = "project_id",
       .type = FieldType::kString,
       .description = "Google Cloud project that holds the dataset and runs the jobs.",
       .required = true,
       .nullable = false,
       .example = "my-gcp-project"},
      {.name = "dataset_id",
       .type = FieldType::kString,
       .description = "BigQuery dataset the tables are written to.",
       .required = true,
       .nullable = false,
       .example = "bizon_data"},
      {.name = "dataset_location",
       .type = FieldType::kString,
       .description = "Location used when bizon creates the dataset (US, EU, a region...).",
       .default_value = "US"},
  };
}

FieldSpec BigqueryTimePartitioningBlockField() {
  return Option::Object(
      "time_partitioning",
      {Option::Enum("type", kPartitionWindows, "Width of one partition.").NotNull().Default("DAY"),
       // No declared default: null (ingestion time) and a missing key (_bizon_loaded_at, or
       // ingestion time under unnest) differ.
       Option::String("field",
                      "TIMESTAMP, DATE or DATETIME column to partition on, _bizon_loaded_at when "
                      "absent; null partitions by ingestion time.")},
      "a {type, field} block");
}

FieldSpec BigqueryTimePartitioningField(bool nullable) {
  FieldSpec field = {
      .name = "time_partitioning",
      .type = FieldType::kAny,
      .description = "How the tables bizon creates are time-partitioned.",
      .nullable = nullable,
      .default_value = DefaultTimePartitioning(),
      .one_of =
          {
              BigqueryTimePartitioningBlockField(),
              {.name = "time_partitioning",
               .type = FieldType::kEnum,
               .description = "a bare window (DAY, HOUR, MONTH or YEAR)",
               .nullable = false,
               .enum_values = kPartitionWindows,
               .deprecated = "write the block form instead, e.g. `time_partitioning: {type: DAY}`"},
          },
  };
  if (nullable) {
    // An explicit null turns partitioning off, while a missing key means the default block. A
    // declared default would replace the null, so the destination applies the default itself.
    field.description =
        "How the tables bizon creates are time-partitioned; null creates them unpartitioned. "
        "Default: {type: DAY, field: _bizon_loaded_at}.";
    field.default_value.reset();
  }
  return field;
}

FieldSpec BigqueryEnforcePartitioningField() {
  return {
      .name = "enforce_partitioning",
      .type = FieldType::kBoolean,
      .description =
          "On a full refresh, drop a destination table whose partitioning differs "
          "from time_partitioning so that publishing recreates it; table metadata "
          "such as labels and ACLs is lost.",
      .nullable = false,
      .default_value = false,
  };
}

FieldSpec BigqueryRecordSchemasField() {
  FieldSpec field = {
      .name = "record_schemas",
      .type = FieldType::kList,
      .description = "Column schema per destination id, used when unnest is on.",
      .items = {FieldSpec{
          .name = "record_schema_entry",
          .type = FieldType::kObject,
          .description = "The columns of one destination table.",
          .fields =
              {
                  {.name = "destination_id",
                   .type = FieldType::kString,
                   .description = "Table this schema applies to, as routed records name it.",
                   .required = true,
                   .nullable = false},
                  {.name = "record_schema",
                   .type = FieldType::kList,
                   .description = "Columns of the table, in order.",
                   .required = true,
                   .nullable = false,
                   .items = {BigqueryColumnField()}},
                  {.name = "clustering_keys",
                   .type = FieldType::kList,
                   .description = "Columns the table is clustered by, in order.",
                   .items = {FieldSpec{.name = "clustering_key", .type = FieldType::kString}}},
              },
          // The original drops unknown keys of an entry without a word.
          .unknown_keys = UnknownKeys::kWarn,
      }},
  };
  // A table's own write_disposition, primary_key, schema_contract ... over the
  // destination-wide ones (common/write_disposition.h).
  for (FieldSpec& policy : TablePolicyFields()) field.items[0].fields.push_back(std::move(policy));
  return field;
}

FieldSpec BigqueryTablePrefixField() {
  return {
      .name = "table_prefix",
      .type = FieldType::kString,
      .description =
          "Prefix of the table names bizon derives from source and stream when no "
          "destination_id is set; an existing unprefixed table is reused. Empty "
          "disables it.",
      .nullable = false,
      .default_value = "_bizon_",
  };
}

FieldSpec BigqueryAuthenticationField() { return GoogleAuthenticationField(); }

FieldSpec BigqueryMaxRowsPerRequestField() {
  return {
      .name = "bq_max_rows_per_request",
      .type = FieldType::kInteger,
      .description = "Most rows sent in one streaming request.",
      .default_value = 5000,
      .minimum = 1,
      .maximum = 10000,
  };
}

std::vector<ConfigRuleViolation> CheckStreamTableIds(const Value& config) {
  std::vector<ConfigRuleViolation> violations;
  const Value* streams = config.Find("streams");
  if (streams == nullptr || !streams->is_list()) return violations;
  for (size_t i = 0; i < streams->AsList().size(); ++i) {
    const Value* destination = streams->AsList()[i].Find("destination");
    std::string table = destination != nullptr ? destination->GetString("table_id") : "";
    if (table.empty()) continue;
    size_t parts = static_cast<size_t>(std::count(table.begin(), table.end(), '.')) + 1;
    if (parts != 3) {
      violations.push_back(
          {.path = fmt::format("streams[{}].destination.table_id", i),
           .message =
               fmt::format("table_id must look like 'project.dataset.table', got '{}' ({} parts)",
                           table, parts),
           .mark = destination->mark()});
    }
  }
  return violations;
}

}  // namespace bizon
