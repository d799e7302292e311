#include "connectors/destinations/bigquery_common/bigquery_tables.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "common/write_disposition.h"
#include "connectors/destinations/destination_options.h"
#include "connectors/destinations/destination_record.h"

namespace bizon {
Status BigqueryDestinationError(StatusCode code, std::string message) {
  return Status(code, std::move(message), FailureClass::kDestination);
}

Status BigqueryDestinationContext(const Status& status, std::string_view context) {
  return status.WithContext(context).WithFailureClass(FailureClass::kDestination);
}

std::string BigqueryConfigLine(const Value* node) {
  return node != nullptr && node->mark().line > 0 ? fmt::format(" (line {})", node->mark().line)
                                                  : std::string();
}

Status AtBigqueryConfigLine(const Status& status, const Value* node) {
  return Status(status.code(), status.message() + BigqueryConfigLine(node), FailureClass::kConfig);
}

std::vector<ConfigRuleViolation> BigqueryConfigViolations(
    const Value& config, SyncMode sync_mode,
    const std::function<Status(const DestinationContext&)>& create) {
  // The table policies' own rules first (common/write_disposition.h), each with its path:
  // create() would stop at the first of them.
  std::vector<ConfigRuleViolation> policies = CheckTablePolicies(config, sync_mode);
  if (!policies.empty()) return policies;
  const Value* schemas = config.Find("record_schemas");
  if (ReadCommonDestinationOptions(config).unnest &&
      (schemas == nullptr || !schemas->is_list() || schemas->AsList().empty())) {
    return {};  // The pipeline spec reports unnest without record_schemas itself.
  }
  DestinationContext context;
  context.sync.sync_mode = sync_mode;
  context.config = config;
  Status created = create(context);
  if (created.ok()) return {};
  std::string message = created.message();
  constexpr std::string_view kPrefix = "destination.config.";
  std::string path;
  if (message.starts_with(kPrefix)) {
    size_t colon = message.find(": ");
    if (colon != std::string::npos) {
      path = message.substr(kPrefix.size(), colon - kPrefix.size());
      message = message.substr(colon + 2);
    }
  }
  if (size_t line = message.rfind(" (line "); line != std::string::npos && message.ends_with(")")) {
    message.resize(line);
  }
  if (path.empty()) return {};  // Required options: the spec reports them.
  return {{.path = path, .message = message}};
}

Result<BigqueryRecordSchemas> ParseBigqueryRecordSchemas(const Value& config, bool unnest) {
  BigqueryRecordSchemas out;
  const Value* schemas = config.Find("record_schemas");
  if (schemas == nullptr || !schemas->is_list()) return out;
  for (size_t i = 0; i < schemas->AsList().size(); ++i) {
    const Value& entry = schemas->AsList()[i];
    std::string where = fmt::format("destination.config.record_schemas[{}]", i);
    std::string id = entry.GetString("destination_id");
    const Value* record_schema = entry.Find("record_schema");
    auto parsed = ParseRecordSchema(record_schema != nullptr ? *record_schema : Value(), where);
    if (!parsed) {
      return Fail(
          AtBigqueryConfigLine(parsed.error(), record_schema != nullptr ? record_schema : &entry));
    }
    std::vector<BqColumn> columns = std::move(*parsed);
    std::vector<std::string> keys;
    if (const Value* clustering = entry.Find("clustering_keys");
        clustering != nullptr && clustering->is_list()) {
      const std::vector<BqColumn>& written = unnest ? columns : BigqueryRawColumns();
      for (const Value& key : clustering->AsList()) {
        std::string name = key.ToDisplayString();
        if (std::none_of(written.begin(), written.end(),
                         [&](const BqColumn& column) { return column.name == name; })) {
          return Fail(InvalidArgumentError(fmt::format(
              "{}.clustering_keys: '{}' is not a column of the table{}{}", where, name,
              unnest ? "" : " (without unnest the columns are the _bizon_/_source_ ones)",
              BigqueryConfigLine(&key))));
        }
        keys.push_back(std::move(name));
      }
      if (keys.size() > 4) {
        return Fail(InvalidArgumentError(
            fmt::format("{}.clustering_keys: BigQuery clusters by at most 4 columns", where)));
      }
    }
    out.columns[id] = std::move(columns);
    if (!keys.empty()) out.clustering[id] = std::move(keys);
  }
  return out;
}

Result<BigqueryTableLayout> BigqueryLayoutFor(const BigqueryRecordSchemas& schemas, bool unnest,
                                              std::string_view destination_id,
                                              std::string_view default_destination_id,
                                              std::string_view table) {
  std::string key(destination_id.empty() ? default_destination_id : destination_id);
  auto schema = schemas.columns.find(key);
  if (schema == schemas.columns.end()) schema = schemas.columns.find(table);
  if (schema == schemas.columns.end() && destination_id.empty() && schemas.columns.size() == 1) {
    schema = schemas.columns.begin();
  }
  BigqueryTableLayout layout;
  if (unnest) {
    if (schema == schemas.columns.end()) {
      return Fail(
          Status(StatusCode::kInvalidArgument,
                 fmt::format("unnest is on but record_schemas has no entry for destination_id {}",
                             QuoteDestinationId(key.empty() ? table : std::string_view(key))),
                 FailureClass::kDestination));
    }
    layout.columns = schema->second;
  } else {
    layout.columns = BigqueryRawColumns();
  }
  if (schema != schemas.columns.end()) {
    layout.entry = schema->first;
    if (auto keys = schemas.clustering.find(schema->first); keys != schemas.clustering.end()) {
      layout.clustering = keys->second;
    }
  }
  return layout;
}

Result<BigqueryDatasetTarget> PrepareBigqueryDataset(
    BigQueryClient& client, const std::string& project, const std::string& dataset,
    const std::string& location, bool create, const std::string& prefix,
    const std::string& destination_id, const SyncMetadata& sync) {
  auto found = client.GetDataset(project, dataset);
  if (!found && found.error().code() == StatusCode::kNotFound) {
    if (!create) {
      return Fail(Status(StatusCode::kFailedPrecondition,
                         fmt::format("BigQuery dataset {}.{} does not exist. Create it manually "
                                     "or set `create_dataset: true` on the destination config.",
                                     project, dataset),
                         FailureClass::kDestination));
    }
    found =
        client.InsertDataset({.project = project, .dataset = dataset, .location = location}, true);
  }
  if (!found)
    return Fail(
        BigqueryDestinationContext(found.error(), fmt::format("dataset {}.{}", project, dataset)));
  BigqueryDatasetTarget target{.job_location = found->location, .default_table = destination_id};
  if (!target.default_table.empty()) return target;
  std::string base = sync.source_name + "_" + sync.stream_name;
  target.default_table = base;
  if (prefix.empty()) return target;
  BigQueryTableRef legacy_ref{.project = project, .dataset = dataset, .table = base};
  auto legacy = client.GetTable(legacy_ref);
  if (!legacy && legacy.error().code() == StatusCode::kNotFound) {
    target.default_table = prefix + base;
  } else if (!legacy) {
    spdlog::warn("bigquery destination: could not look up table {}, writing to it: {}",
                 legacy_ref.ToString(), legacy.error().message());
  }
  return target;
}

std::string DescribeBigqueryLayout(const BigQueryTable& table) {
  std::string out;
  if (!table.time_partitioning) {
    out = "not partitioned";
  } else if (table.time_partitioning->field.empty()) {
    out = fmt::format("partitioned by ingestion time ({})", table.time_partitioning->type);
  } else {
    out = fmt::format("partitioned by `{}` ({})", table.time_partitioning->field,
                      table.time_partitioning->type);
  }
  if (!table.clustering_fields.empty()) {
    out += fmt::format(", clustered by ({})", fmt::join(table.clustering_fields, ", "));
  }
  return out;
}

bool SameBigqueryLayout(const BigQueryTable& a, const BigQueryTable& b) {
  bool a_partitioned = a.time_partitioning.has_value();
  if (a_partitioned != b.time_partitioning.has_value()) return false;
  if (a_partitioned && (a.time_partitioning->type != b.time_partitioning->type ||
                        a.time_partitioning->field != b.time_partitioning->field)) {
    return false;
  }
  return a.clustering_fields == b.clustering_fields;
}

std::string BigqueryStagingOwner(std::string_view job_id) {
  return fmt::format("bizon staging table of pipeline job {}", job_id);
}

namespace {

/// Adds to `existing` the columns of `wanted` it lacks (see PrepareBigqueryTable).
Status AddMissingColumns(BigQueryClient& client, BigQueryTable existing,
                         const BigQuerySchema& wanted) {
  std::vector<std::string> added;
  for (const BigQueryField& field : wanted) {
    bool present = std::any_of(existing.schema.begin(), existing.schema.end(),
                               [&](const BigQueryField& have) { return have.name == field.name; });
    if (present) continue;
    BigQueryField column = field;
    if (column.mode == "REQUIRED") column.mode = "NULLABLE";
    existing.schema.push_back(std::move(column));
    added.push_back(field.name);
  }
  if (added.empty()) return Status::Ok();
  spdlog::warn("bigquery destination: adding columns {} to table {}", fmt::join(added, ", "),
               existing.ref.ToString());
  auto done = client.PatchTable(existing);
  if (!done) {
    return BigqueryDestinationContext(done.error(), "adding columns to " + existing.ref.ToString());
  }
  return Status::Ok();
}

}  // namespace

Status PrepareBigqueryTable(BigQueryClient& client, BigQueryTable wanted, bool staged,
                            std::string_view job_id,
                            const std::function<void(const std::string&)>& on_abandoned,
                            bool add_missing_columns) {
  std::string owner = BigqueryStagingOwner(job_id);
  if (staged) wanted.description = owner;
  auto existing = client.GetTable(wanted.ref);
  if (existing) {
    if (!staged && add_missing_columns) return AddMissingColumns(client, *existing, wanted.schema);
    if (!staged || existing->description == owner) return Status::Ok();
    // Left by another job (a failed or killed earlier run): its rows are not this job's.
    spdlog::info("bigquery destination: dropping staging table {} left by an earlier job",
                 wanted.ref.ToString());
    const std::string owner_prefix = BigqueryStagingOwner("");
    if (existing->description.starts_with(owner_prefix) && on_abandoned) {
      on_abandoned(existing->description.substr(owner_prefix.size()));
    }
    Status dropped = client.DeleteTable(wanted.ref, true);
    if (!dropped.ok())
      return BigqueryDestinationContext(dropped, "dropping " + wanted.ref.ToString());
  } else if (existing.error().code() != StatusCode::kNotFound) {
    return BigqueryDestinationContext(existing.error(), "table " + wanted.ref.ToString());
  }
  auto created = client.InsertTable(wanted, true);
  if (!created)
    return BigqueryDestinationContext(created.error(), "creating table " + wanted.ref.ToString());
  return Status::Ok();
}

Result<BigQueryJob> EnsureBigqueryJob(BigQueryClient& client, const BigQueryJobRef& base,
                                      const Value& configuration, bool wait, bool submitted_here,
                                      std::string_view media) {
  constexpr int kAttempts = 5;
  Status last = Status::Ok();
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    BigQueryJobRef ref = base;
    if (attempt > 0) ref.job_id = fmt::format("{}_r{}", base.job_id, attempt);
    auto existing = client.GetJob(ref);
    if (existing) {
      BigQueryJob job = std::move(*existing);
      if (!job.done()) {
        if (!wait) return job;
        auto waited = client.WaitForJob(job);
        if (!waited) {
          // It failed: its id cannot run again, the next attempt has its own.
          last = waited.error();
          continue;
        }
        job = std::move(*waited);
      }
      if (job.error) {
        // A failed job's id cannot run again: the next attempt has its own.
        spdlog::info("bigquery destination: job {} failed earlier ({}); retrying as a new job",
                     ref.job_id, job.error->message());
        last = *job.error;
        continue;
      }
      if (!submitted_here) {
        spdlog::info("bigquery destination: job {} already ran; not running it again", ref.job_id);
      }
      job.already_existed = true;
      return job;
    }
    if (existing.error().code() != StatusCode::kNotFound) return Fail(existing.error());
    auto inserted = client.InsertJob(ref, configuration, media);
    if (!inserted) return Fail(inserted.error());
    if (!wait) return inserted;
    if (inserted->done() && !inserted->error) return inserted;
    auto waited = client.WaitForJob(std::move(*inserted));
    if (waited) return waited;
    if (waited.error().code() != StatusCode::kUnavailable) return Fail(waited.error());
    last = waited.error();
  }
  return Fail(last);
}

}  // namespace bizon
