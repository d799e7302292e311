// What the bigquery and bigquery_streaming_v2 destinations do alike with tables, datasets and
// jobs: the record_schemas entries and their clustering keys, the default table's name (spec
// 8.1.1), the dataset check, creating a staging table owned by the pipeline job, and running a
// job once under a deterministic id.
//
// Thread-safety: free functions; the client they are given is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/config_spec.h"
#include "bizon/destination.h"
#include "bizon/registry.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "connectors/destinations/bigquery/bigquery_load_schema.h"
#include "google/bigquery_client.h"

namespace bizon {

/// " (line N)" of a config node, for config errors; empty when the node has no position.
std::string BigqueryConfigLine(const Value* node);
/// `status` with the line of `node` appended (BigqueryConfigLine), as a config error.
Status AtBigqueryConfigLine(const Status& status, const Value* node);

/// The `record_schemas` option, parsed: columns and clustering keys per destination id.
struct BigqueryRecordSchemas {
  std::map<std::string, std::vector<BqColumn>, std::less<>> columns;
  std::map<std::string, std::vector<std::string>, std::less<>> clustering;
};

/// Reads `record_schemas` of a destination config. Clustering keys must be columns of the table
/// written (the record schema under `unnest`, else the raw columns), at most 4. Errors are
/// kInvalidArgument, config class, naming `destination.config.record_schemas[i]` and the line.
Result<BigqueryRecordSchemas> ParseBigqueryRecordSchemas(const Value& config, bool unnest);

/// The columns and clustering keys of one table.
struct BigqueryTableLayout {
  std::vector<BqColumn> columns;
  std::vector<std::string> clustering;
  /// The destination_id of the record_schemas entry it comes from; empty: none.
  std::string entry;
};

/// The layout of the table a record routed to `destination_id` goes to: its record_schemas
/// entry is the record's id, else `default_destination_id`, else `table` (the resolved name),
/// else the only entry there is (for the default table). Raw columns without `unnest`; under
/// `unnest` a missing entry is kInvalidArgument, destination class.
Result<BigqueryTableLayout> BigqueryLayoutFor(const BigqueryRecordSchemas& schemas, bool unnest,
                                              std::string_view destination_id,
                                              std::string_view default_destination_id,
                                              std::string_view table);

/// The rules a destination's Create() enforces beyond the declared spec, as `config validate`
/// reports them: the table policies' rules (CheckTablePolicies), else `create` runs over
/// `config`, and its first error becomes the option's path and the message (without the line,
/// which the diagnostic shows). Errors without a `destination.config.<path>: ` prefix (required
/// options) are left to the spec.
std::vector<ConfigRuleViolation> BigqueryConfigViolations(
    const Value& config, SyncMode sync_mode,
    const std::function<Status(const DestinationContext&)>& create);

/// Where a run writes by default: the dataset's location (where jobs run) and the default table.
struct BigqueryDatasetTarget {
  std::string job_location;
  std::string default_table;
};

/// Checks that `project.dataset` exists, creating it in `location` when it does not and `create`
/// is set (else fails naming the option that would), and resolves the default table (spec
/// 8.1.1): `destination_id` when set; otherwise an existing `<source>_<stream>` table is reused,
/// else `<prefix><source>_<stream>` (the bare base when the prefix is empty), one tables.get.
Result<BigqueryDatasetTarget> PrepareBigqueryDataset(
    BigQueryClient& client, const std::string& project, const std::string& dataset,
    const std::string& location, bool create, const std::string& prefix,
    const std::string& destination_id, const SyncMetadata& sync);

/// "partitioned by `f` (DAY), clustered by (a, b)", "partitioned by ingestion time (DAY)" or
/// "not partitioned", for messages.
std::string DescribeBigqueryLayout(const BigQueryTable& table);
/// Whether two tables have the same partitioning (window and field) and clustering.
bool SameBigqueryLayout(const BigQueryTable& a, const BigQueryTable& b);

/// The description of a staging table owned by pipeline job `job_id`.
std::string BigqueryStagingOwner(std::string_view job_id);

/// Makes `wanted` exist with its schema, partitioning and clustering. `staged`: it is a staging
/// table of pipeline job `job_id` (its description says so): one owned by another job (a failed
/// or killed earlier run) is dropped and made again, after `on_abandoned(earlier job id)` runs;
/// one owned by this job (a resumed run) is kept. A table that is not staged is kept as it is,
/// except that `add_missing_columns` adds the columns of `wanted` it lacks (as the original's
/// streaming destinations do when a record schema gains a column), NULLABLE whatever their
/// declared mode, since BigQuery adds no REQUIRED column to a table that has rows. Columns are
/// never dropped or retyped.
Status PrepareBigqueryTable(BigQueryClient& client, BigQueryTable wanted, bool staged,
                            std::string_view job_id,
                            const std::function<void(const std::string&)>& on_abandoned,
                            bool add_missing_columns = false);

/// A failure of a BigQuery destination (failure class `destination`).
Status BigqueryDestinationError(StatusCode code, std::string message);
/// `status` with `context` prefixed, as a failure of a BigQuery destination.
Status BigqueryDestinationContext(const Status& status, std::string_view context);

/// Runs the job `base.job_id` once: a job of that id already DONE without error is returned as
/// it is (already_existed; the emulator accepts a duplicate id, hence the lookup), a failed one
/// is retried as `<id>_r<k>`; waits for it when `wait`. `submitted_here`: this process submitted
/// it, so finding it is no news. `media`: a load job's data, uploaded with the job.
Result<BigQueryJob> EnsureBigqueryJob(BigQueryClient& client, const BigQueryJobRef& base,
                                      const Value& configuration, bool wait,
                                      bool submitted_here = false, std::string_view media = {});

}  // namespace bizon
