// Config options shared by the three BigQuery destinations (bigquery, bigquery_streaming,
// bigquery_streaming_v2), declared once so their specs cannot drift apart, and their rule on a
// pipeline's `streams:` block.
#pragma once

#include <vector>

#include "bizon/config_spec.h"

namespace bizon {

/// `project_id`, `dataset_id` and `dataset_location`: where the tables live.
std::vector<FieldSpec> BigqueryDatasetFields();

/// `time_partitioning`: a `{type, field}` block, or a bare window such as `DAY` (older form).
/// `nullable`: whether `null` is accepted to turn partitioning off (streaming destinations only).
FieldSpec BigqueryTimePartitioningField(bool nullable);
/// The block form of `time_partitioning`, `{type, field}`: what its reader reads against.
FieldSpec BigqueryTimePartitioningBlockField();

/// `enforce_partitioning`: drop a table whose partitioning differs on a full refresh.
FieldSpec BigqueryEnforcePartitioningField();

/// `record_schemas`: the BigQuery column schema per destination id, with clustering keys.
FieldSpec BigqueryRecordSchemasField();

/// `table_prefix`: prefix of table names bizon picks itself.
FieldSpec BigqueryTablePrefixField();

/// `authentication`: an optional service-account key; Application Default Credentials otherwise.
FieldSpec BigqueryAuthenticationField();

/// `bq_max_rows_per_request`: row cap of one streaming request (streaming destinations).
FieldSpec BigqueryMaxRowsPerRequestField();

/// The descriptors' check_pipeline: each `streams[].destination.table_id` of the (normalized)
/// pipeline config must look like `project.dataset.table`, as the original requires.
std::vector<ConfigRuleViolation> CheckStreamTableIds(const Value& config);

}  // namespace bizon
