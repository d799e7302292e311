// bigquery: batch loads through Avro files staged in Google Cloud Storage, published with copy
// jobs (see bigquery_destination.h).
#include "connectors/destinations/bigquery/bigquery_destination.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "bizon/config_spec.h"
#include "connectors/destinations/bigquery_common/bigquery_config_fields.h"
#include "connectors/destinations/bigquery_common/bigquery_merge.h"
#include "connectors/destinations/bigquery_common/bigquery_tables.h"
#include "connectors/destinations/destination_options.h"
#include "connectors/destinations/destination_record.h"
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
       .description = "File format of the staged files. Files are always Avro, BigQuery's "
                      "recommended load format, which keeps every column type; parquet and csv "
                      "(the original's values) are accepted and load the same Avro files, with "
                      "a notice.",
       .nullable = false,
       .default_value = "avro",
       .enum_values = {"avro", "parquet", "csv"}},
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
  for (FieldSpec& policy : WriteDispositionFields()) fields.push_back(std::move(policy));
  return fields;
}

constexpr uint64_t kFnvOffsetBasis = 1469598103934665603ULL;

/// FNV-1a 64 of `text`, continuing from `hash` (the offset basis starts a new one).
uint64_t Fnv1a(std::string_view text, uint64_t hash = kFnvOffsetBasis) {
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

/// Whether `policy` reads records as something other than plain rows of their columns.
bool NeedsShaping(const TablePolicy& policy) {
  return policy.merges() || policy.contract != SchemaContract::kExact ||
         policy.change_format != ChangeFormat::kNone || !policy.hard_delete.empty();
}

/// The option of `policy` that needs unnest, for messages.
std::string_view ShapingOption(const TablePolicy& policy) {
  if (policy.merges()) return "write_disposition";
  if (policy.contract != SchemaContract::kExact) return "schema_contract";
  if (policy.change_format != ChangeFormat::kNone) return "change_format";
  return "hard_delete";
}

/// The table-policy rules of this destination beyond CheckTablePolicies: merge, contracts and
/// change formats read the record's keys as columns (unnest), the key and dedup_sort columns are
/// columns of the record_schemas entry, and a merge is applied at once (no async_load).
Status CheckBigqueryPolicies(const Value& config, bool unnest, bool async_load,
                             const BigqueryRecordSchemas& schemas, const TablePolicies& policies) {
  auto fail = [](const std::string& path, std::string_view message) {
    return InvalidArgumentError(fmt::format("destination.config.{}: {}", path, message));
  };
  std::vector<std::pair<std::string, const TablePolicy*>> tables = {{"", &policies.Default()}};
  const Value* entries = config.Find("record_schemas");
  for (size_t i = 0; entries != nullptr && entries->is_list() && i < entries->AsList().size();
       ++i) {
    std::string id = entries->AsList()[i].GetString("destination_id");
    tables.emplace_back(fmt::format("record_schemas[{}].", i), &policies.For(id));
    const TablePolicy& policy = policies.For(id);
    auto columns = schemas.columns.find(id);
    if (unnest && policy.merges() && columns != schemas.columns.end()) {
      std::string problem = CheckMergeColumns(policy, columns->second);
      if (!problem.empty()) {
        std::string_view option = problem.starts_with("primary_key") ? "primary_key" : "dedup_sort";
        return fail(fmt::format("record_schemas[{}].{}", i, option),
                    problem.substr(problem.find(": ") + 2));
      }
    }
  }
  for (const auto& [where, policy] : tables) {
    if (!unnest && NeedsShaping(*policy)) {
      return fail(where + std::string(ShapingOption(*policy)),
                  "needs unnest: true: the record's keys are the columns it reads (the "
                  "primary_key, the schema, the change's row)");
    }
  }
  if (policies.AnyMerge() && async_load) {
    return fail("async_load",
                "a merge loads and applies each flush before its cursor is recorded; async_load "
                "applies to append and replace");
  }
  return Status::Ok();
}

bool IsTimestampColumn(std::string_view name) {
  return name == "_source_timestamp" || name == "_bizon_extracted_at" || name == "_bizon_loaded_at";
}

}  // namespace

std::string BigqueryJobId(std::string_view kind, std::string_view pipeline_job_id,
                          std::string_view table, int64_t sequence) {
  std::string job(pipeline_job_id);
  for (char& c : job) {
    auto byte = static_cast<unsigned char>(c);
    if (!(std::isalnum(byte) != 0 || c == '_' || c == '-') || byte >= 0x80) c = '_';
  }
  return fmt::format("bizon_{}_{}_{:016x}_{}", kind, job, Fnv1a(table), sequence);
}

std::string BigqueryLoadJobId(std::string_view pipeline_job_id, std::string_view table,
                              int64_t sequence, const RecordBatch& records,
                              const std::vector<size_t>& rows) {
  return BigqueryRowsJobId("load", pipeline_job_id, table, sequence, records, rows);
}

std::string BigqueryRowsJobId(std::string_view kind, std::string_view pipeline_job_id,
                              std::string_view table, int64_t sequence, const RecordBatch& records,
                              const std::vector<size_t>& rows) {
  // A 0xff byte after each field (never in UTF-8 text), so that ("ab", "c") and ("a", "bc")
  // differ. Not the timestamps: sources that stamp records when they fetch them (the generator,
  // most APIs) give the same rows another time on a re-fetch.
  constexpr std::string_view kSeparator = "\xff";
  uint64_t hash = kFnvOffsetBasis;
  for (size_t row : rows) {
    hash = Fnv1a(kSeparator, Fnv1a(records.id(row), hash));
    hash = Fnv1a(kSeparator, Fnv1a(records.payload(row), hash));
  }
  return fmt::format("{}_{:016x}", BigqueryJobId(kind, pipeline_job_id, table, sequence), hash);
}

Status CheckBigqueryTableName(std::string_view table, SyncMode sync_mode) {
  BIZON_RETURN_IF_ERROR(CheckDestinationIdCharacters(table));
  // BigQuery's table names hold letters, marks, numbers, connectors, dashes and spaces. Of ASCII
  // that leaves [A-Za-z0-9_ -]; other UTF-8 text is left for BigQuery to judge by its Unicode
  // categories. A dot would also name another dataset.
  for (char c : table) {
    auto byte = static_cast<unsigned char>(c);
    bool allowed = byte >= 0x80 || std::isalnum(byte) != 0 || c == '_' || c == '-' || c == ' ';
    if (!allowed) {
      return BigqueryDestinationError(
          StatusCode::kInvalidArgument,
          fmt::format("BigQuery table name {} holds '{}': a bigquery destination id is a bare "
                      "table name in the configured dataset, of letters, digits, '_', '-' and "
                      "spaces",
                      QuoteDestinationId(table), c));
    }
  }
  if (StagingTableName(table, sync_mode).size() > 1024) {
    return BigqueryDestinationError(
        StatusCode::kInvalidArgument,
        fmt::format("BigQuery table name {} is too long: BigQuery allows 1024 bytes, staging "
                    "suffix included",
                    QuoteDestinationId(table.substr(0, 40))));
  }
  return Status::Ok();
}

Result<std::optional<BigQueryTimePartitioning>> ResolveBigqueryPartitioning(
    const Value* time_partitioning, bool unnest,
    const std::map<std::string, std::vector<BqColumn>, std::less<>>& unnest_columns) {
  constexpr std::string_view kPath = "destination.config.time_partitioning";
  BigQueryTimePartitioning partitioning;
  std::optional<std::string> field;  // nullopt: not written; "" : null (ingestion time).
  bool field_written = false;
  if (time_partitioning == nullptr || time_partitioning->is_null()) {
    field_written = false;
  } else if (time_partitioning->is_string()) {
    partitioning.type = time_partitioning->AsString();
  } else if (time_partitioning->is_map()) {
    OptionReader block(BigqueryTimePartitioningBlockField(), *time_partitioning);
    partitioning.type = block.String("type");
    BIZON_RETURN_IF_ERROR(block.status());
    if (const Value* written = time_partitioning->Find("field"); written != nullptr) {
      field_written = true;
      field = written->is_null() ? std::string() : written->ToDisplayString();
    }
  }
  if (!unnest) {
    if (!field_written) field = "_bizon_loaded_at";
    if (!field->empty() && !IsTimestampColumn(*field)) {
      return Fail(InvalidArgumentError(fmt::format(
          "{}.field: '{}' is not a TIMESTAMP column of the table; partition on one of "
          "_source_timestamp, _bizon_extracted_at, _bizon_loaded_at, or set it to null for "
          "ingestion time",
          kPath, *field)));
    }
    partitioning.field = *field;
    return partitioning;
  }
  // Unnest: the declared default names _bizon_loaded_at, which a record schema rarely has; a
  // field the user did not write (or that default) partitions by ingestion time.
  bool declared_anywhere = false;
  if (field && *field == "_bizon_loaded_at") {
    for (const auto& [id, columns] : unnest_columns) {
      for (const BqColumn& column : columns) declared_anywhere |= column.name == *field;
    }
    if (!declared_anywhere) field_written = false;
  }
  if (!field_written || field->empty()) {
    if (!field_written) {
      spdlog::info(
          "bigquery destination: unnest is on and time_partitioning names no field of the "
          "record schemas; tables are partitioned by ingestion time ({})",
          partitioning.type);
    }
    partitioning.field.clear();
    return partitioning;
  }
  for (const auto& [id, columns] : unnest_columns) {
    auto found = std::find_if(columns.begin(), columns.end(),
                              [&](const BqColumn& column) { return column.name == *field; });
    if (found == columns.end() ||
        (found->type != BqColumnType::kTimestamp && found->type != BqColumnType::kDate &&
         found->type != BqColumnType::kDatetime)) {
      std::vector<std::string> available;
      for (const BqColumn& column : columns) {
        if (column.type == BqColumnType::kTimestamp || column.type == BqColumnType::kDate ||
            column.type == BqColumnType::kDatetime) {
          available.push_back(column.name);
        }
      }
      return Fail(InvalidArgumentError(fmt::format(
          "{}.field: '{}' is not a TIMESTAMP, DATE or DATETIME column of the record schema of "
          "destination_id '{}' (its partitionable columns: {})",
          kPath, *field, id,
          available.empty() ? "none" : fmt::format("{}", fmt::join(available, ", ")))));
    }
    if (found->type == BqColumnType::kDate && partitioning.type == "HOUR") {
      return Fail(InvalidArgumentError(
          fmt::format("{}.type: HOUR cannot partition the DATE column '{}' of destination_id "
                      "'{}'; use DAY, MONTH or YEAR",
                      kPath, *field, id)));
    }
  }
  partitioning.field = *field;
  return partitioning;
}

BigqueryDestination::BigqueryDestination(const DestinationContext& context)
    : sync_(context.sync), job_abandoned_(context.job_abandoned) {}

BigqueryDestination::~BigqueryDestination() = default;

Result<std::unique_ptr<BigqueryDestination>> BigqueryDestination::Create(
    const DestinationContext& context) {
  std::unique_ptr<BigqueryDestination> destination(new BigqueryDestination(context));
  BigqueryDestination& d = *destination;
  const Value& config = context.config;
  BIZON_RETURN_IF_ERROR(d.ReadOptions(config));
  if (d.project_.empty() || d.dataset_.empty() || d.bucket_.empty()) {
    return Fail(InvalidArgumentError(
        "destination.config: project_id, dataset_id and gcs_buffer_bucket are required"));
  }
  BIZON_ASSIGN_OR_RETURN(BigqueryRecordSchemas record_schemas,
                         ParseBigqueryRecordSchemas(config, d.unnest_));
  BIZON_ASSIGN_OR_RETURN(d.policies_, ReadTablePolicies(config));
  BIZON_RETURN_IF_ERROR(
      CheckBigqueryPolicies(config, d.unnest_, d.async_load_, record_schemas, d.policies_));
  d.schemas_ = std::move(record_schemas.columns);
  d.clustering_ = std::move(record_schemas.clustering);
  if (d.unnest_ && d.schemas_.empty()) {
    return Fail(InvalidArgumentError(
        "destination.config.unnest: At least one `record_schemas` must be provided if `unnest` "
        "is set to True."));
  }

  std::map<std::string, std::vector<BqColumn>, std::less<>> none;
  const Value* time_partitioning = config.Find("time_partitioning");
  auto partitioning =
      ResolveBigqueryPartitioning(time_partitioning, d.unnest_, d.unnest_ ? d.schemas_ : none);
  if (!partitioning) {
    const Value* field = time_partitioning != nullptr ? time_partitioning->Find("field") : nullptr;
    return Fail(
        AtBigqueryConfigLine(partitioning.error(), field != nullptr ? field : time_partitioning));
  }
  d.partitioning_ = *partitioning;
  if (!d.default_destination_id_.empty()) {
    Status checked = CheckBigqueryTableName(d.default_destination_id_, d.sync_.sync_mode);
    if (!checked.ok()) {
      return Fail(InvalidArgumentError("destination.config.destination_id: " + checked.message()));
    }
  }
  return destination;
}

Status BigqueryDestination::ReadOptions(const Value& config) {
  OptionReader options(Option::Object("config", BigqueryFields()), config);
  project_ = StringOrEmpty(options, "project_id");
  dataset_ = StringOrEmpty(options, "dataset_id");
  dataset_location_ = options.String("dataset_location");
  create_dataset_ = options.Boolean("create_dataset");
  bucket_ = StringOrEmpty(options, "gcs_buffer_bucket");
  buffer_format_ = options.String("gcs_buffer_format");
  enforce_partitioning_ = options.Boolean("enforce_partitioning");
  async_load_ = options.Boolean("async_load");
  files_per_job_ = std::max<int64_t>(1, options.Integer("load_files_per_job"));
  max_in_flight_ = std::max<int64_t>(1, options.Integer("load_max_in_flight_jobs"));
  table_prefix_ = options.String("table_prefix");
  OptionReader authentication = options.Object("authentication");
  service_account_key_ = authentication.String("service_account_key");
  key_origin_ += BigqueryConfigLine(authentication.Find("service_account_key"));
  CommonDestinationOptions common = ReadCommonDestinationOptions(config);
  default_destination_id_ = std::move(common.destination_id);
  unnest_ = common.unnest;
  return options.status();
}

BigQueryTableRef BigqueryDestination::Ref(std::string_view table) const {
  return {.project = project_, .dataset = dataset_, .table = std::string(table)};
}

BigQueryJobRef BigqueryDestination::JobRef(std::string job_id) const {
  return {.project = project_, .job_id = std::move(job_id), .location = job_location_};
}

Status BigqueryDestination::Open(const Value& resume_state) {
  std::shared_ptr<GoogleCredentials> credentials;
  if (!service_account_key_.empty()) {
    BIZON_ASSIGN_OR_RETURN(credentials,
                           MakeGoogleCredentials({.inline_key = service_account_key_,
                                                  .inline_key_origin = key_origin_,
                                                  .scopes = {std::string(kBigQueryScope),
                                                             std::string(kGcsReadWriteScope)}}));
  }
  BigQueryClientOptions bigquery_options;
  bigquery_options.credentials = credentials;
  bigquery_options.project = project_;
  auto bigquery = BigQueryClient::Make(std::move(bigquery_options));
  if (!bigquery) return BigqueryDestinationContext(bigquery.error(), "BigQuery client");
  bigquery_ = std::move(*bigquery);
  GcsClientOptions gcs_options;
  gcs_options.credentials = credentials;
  auto gcs = GcsClient::Make(std::move(gcs_options));
  if (!gcs) return BigqueryDestinationContext(gcs.error(), "Cloud Storage client");
  gcs_ = std::move(*gcs);
  if (buffer_format_ != "avro") {
    spdlog::info(
        "bigquery destination: gcs_buffer_format {} is written as Avro files (BigQuery's "
        "recommended load format; the table is the same)",
        buffer_format_);
  }

  // The default table (spec 8.1.1): an explicit id is a bare table name.
  BIZON_ASSIGN_OR_RETURN(
      BigqueryDatasetTarget target,
      PrepareBigqueryDataset(*bigquery_, project_, dataset_, dataset_location_, create_dataset_,
                             table_prefix_, default_destination_id_, sync_));
  job_location_ = std::move(target.job_location);
  default_table_ = std::move(target.default_table);

  loads_ = resume_state.GetInteger("loads", 0);
  if (const Value* tables = resume_state.Find("tables"); tables != nullptr && tables->is_list()) {
    for (const Value& name : tables->AsList()) {
      BIZON_ASSIGN_OR_RETURN(TableState * table, TableFor(name.ToDisplayString()));
      // A shaped table is prepared by its next write, with the columns restored below.
      if (!table->shaped) BIZON_RETURN_IF_ERROR(Prepare(*table));
    }
  }
  BIZON_RETURN_IF_ERROR(RestoreColumns(resume_state));
  if (const Value* pending = resume_state.Find("pending");
      pending != nullptr && pending->is_list()) {
    for (const Value& file : pending->AsList()) {
      pending_.push_back({.table = file.GetString("table"),
                          .object = file.GetString("object"),
                          .sequence = file.GetInteger("sequence")});
    }
  }
  if (const Value* jobs = resume_state.Find("in_flight"); jobs != nullptr && jobs->is_list()) {
    for (const Value& job : jobs->AsList()) {
      InFlightJob restored{.table = job.GetString("table"), .job_id = job.GetString("job_id")};
      if (const Value* objects = job.Find("objects"); objects != nullptr && objects->is_list()) {
        for (const Value& object : objects->AsList()) {
          restored.objects.push_back(object.ToDisplayString());
        }
      }
      in_flight_.push_back(std::move(restored));
    }
  }
  // Jobs a dead run submitted: finish them before anything new is loaded.
  while (!in_flight_.empty()) BIZON_RETURN_IF_ERROR(CompleteOldest());
  return Status::Ok();
}

Result<BigqueryDestination::TableState*> BigqueryDestination::TableFor(
    std::string_view destination_id) {
  std::string name(destination_id.empty() ? std::string_view(default_table_) : destination_id);
  if (auto found = tables_.find(name); found != tables_.end()) return &found->second;
  if (!destination_id.empty()) {
    BIZON_RETURN_IF_ERROR(CheckBigqueryTableName(name, sync_.sync_mode));
  }
  constexpr std::string_view kRejectedSuffix = "__rejected";
  bool declared = schemas_.contains(name) || (destination_id.empty() && schemas_.size() == 1);
  if (unnest_ && !declared && name.ends_with(kRejectedSuffix)) {
    // A resumed run's rejected table: its base table's records went there.
    BIZON_ASSIGN_OR_RETURN(TableState * base,
                           TableFor(name.substr(0, name.size() - kRejectedSuffix.size())));
    return RejectedTableFor(*base);
  }
  auto layout = BigqueryLayoutFor({.columns = schemas_, .clustering = clustering_}, unnest_,
                                  destination_id, default_destination_id_, name);
  TablePolicy policy = policies_.Default();
  if (layout) {
    if (!layout->entry.empty()) policy = policies_.For(layout->entry);
  } else if (policy.contract != SchemaContract::kEvolve) {
    return Fail(layout.error());
  } else {
    // Evolve without an entry: the columns come from the records (inferred).
    layout = BigqueryTableLayout{};
  }
  TableState table;
  table.name = name;
  table.shaped = unnest_ && NeedsShaping(policy);
  table.policy = std::move(policy);
  // A merge applies each load to its target at once: the published table, or a full refresh's
  // staging table, which the publish swaps in.
  table.staging = table.policy.merges() && sync_.sync_mode != SyncMode::kFullRefresh
                      ? name
                      : StagingTableName(name, sync_.sync_mode);
  table.columns = std::move(layout->columns);
  table.clustering = std::move(layout->clustering);
  auto [inserted, unused] = tables_.emplace(name, std::move(table));
  return &inserted->second;
}

BigqueryDestination::TableState* BigqueryDestination::RejectedTableFor(const TableState& table) {
  std::string name = table.name + "__rejected";
  if (auto found = tables_.find(name); found != tables_.end()) return &found->second;
  TableState rejected;
  rejected.name = name;
  rejected.staging = StagingTableName(name, sync_.sync_mode);
  rejected.rejected = true;
  rejected.columns = {
      {"_source_record_id", BqColumnType::kString, BqColumnMode::kNullable, ""},
      {"_bizon_column", BqColumnType::kString, BqColumnMode::kNullable, ""},
      {"_bizon_reason", BqColumnType::kString, BqColumnMode::kNullable, ""},
      {"_bizon_value", BqColumnType::kString, BqColumnMode::kNullable, ""},
      {"_source_data", BqColumnType::kString, BqColumnMode::kNullable, ""},
      {"_bizon_loaded_at", BqColumnType::kTimestamp, BqColumnMode::kNullable, ""},
  };
  auto [inserted, unused] = tables_.emplace(name, std::move(rejected));
  return &inserted->second;
}

bool BigqueryDestination::Replaces(const TableState& table) const {
  return sync_.sync_mode == SyncMode::kFullRefresh ||
         table.policy.disposition == WriteDisposition::kReplace;
}

Status BigqueryDestination::Prepare(TableState& table) {
  if (table.prepared) return Status::Ok();
  BigQueryTable wanted;
  wanted.ref = Ref(table.staging);
  wanted.schema = ToBigQuerySchema(table.columns);
  wanted.time_partitioning = partitioning_;
  wanted.clustering_fields = table.clustering;
  BIZON_RETURN_IF_ERROR(PrepareBigqueryTable(
      *bigquery_, std::move(wanted), table.staging != table.name, sync_.job_id,
      [this](const std::string& earlier) { SweepFilesOfAbandonedJob(earlier); }));
  table.prepared = true;
  return Status::Ok();
}

BigQueryLoadConfig BigqueryDestination::LoadConfig(const TableState& table,
                                                   const std::vector<std::string>& objects) const {
  BigQueryLoadConfig load;
  for (const std::string& object : objects) {
    load.source_uris.push_back(fmt::format("gs://{}/{}", bucket_, object));
  }
  load.source_format = "AVRO";
  load.destination = Ref(table.staging);
  load.schema = ToBigQuerySchema(table.columns);
  load.write_disposition = "WRITE_APPEND";
  load.create_disposition = "CREATE_IF_NEEDED";
  load.schema_update_options = {"ALLOW_FIELD_ADDITION", "ALLOW_FIELD_RELAXATION"};
  load.time_partitioning = partitioning_;
  load.clustering_fields = table.clustering;
  load.use_avro_logical_types = true;
  return load;
}

Result<BigQueryJob> BigqueryDestination::EnsureJob(const std::string& base_id,
                                                   const Value& configuration, bool wait,
                                                   bool submitted_here) {
  return EnsureBigqueryJob(*bigquery_, JobRef(base_id), configuration, wait, submitted_here);
}

Result<std::string> BigqueryDestination::Encode(const TableState& table, const RecordBatch& records,
                                                const std::vector<size_t>& rows,
                                                int64_t loaded_at_us) const {
  BIZON_ASSIGN_OR_RETURN(auto encoder, LoadFileEncoder::Make(table.columns, unnest_));
  for (size_t row : rows) {
    Status appended = encoder->Append(records, row, loaded_at_us);
    if (!appended.ok()) {
      return Fail(
          appended.WithContext("table " + table.name).WithFailureClass(FailureClass::kDestination));
    }
  }
  return encoder->Finish();
}

Result<std::string> BigqueryDestination::Upload(const TableState& table, int64_t sequence,
                                                const std::string& file) {
  std::string object = fmt::format("{}/{}/{}/{:016x}_{}.avro", sync_.source_name, sync_.stream_name,
                                   sync_.job_id, Fnv1a(table.name), sequence);
  auto uploaded = gcs_->Upload(bucket_, object, file, "application/octet-stream");
  if (!uploaded) {
    return Fail(BigqueryDestinationContext(uploaded.error(),
                                           fmt::format("uploading gs://{}/{}", bucket_, object)));
  }
  return object;
}

Status BigqueryDestination::LoadFile(TableState& table, int64_t sequence, const std::string& file,
                                     const RecordBatch& records, const std::vector<size_t>& rows) {
  BIZON_RETURN_IF_ERROR(Prepare(table));
  BIZON_ASSIGN_OR_RETURN(std::string object, Upload(table, sequence, file));
  if (async_load_) {
    pending_.push_back({.table = table.name, .object = object, .sequence = sequence});
    return Status::Ok();
  }
  std::string job_id = BigqueryLoadJobId(sync_.job_id, table.name, sequence, records, rows);
  Value configuration = LoadConfig(table, {object}).ToJson();
  auto loaded = EnsureJob(job_id, configuration, /*wait=*/true);
  DeleteObjects({object});
  if (!loaded) {
    return BigqueryDestinationContext(
        loaded.error(),
        fmt::format("loading {} rows into {}", rows.size(), Ref(table.staging).ToString()));
  }
  return Status::Ok();
}

void BigqueryDestination::DeleteObjects(const std::vector<std::string>& objects) {
  for (const std::string& object : objects) {
    Status deleted = gcs_->Delete(bucket_, object);
    // A leftover staging file costs storage only; OnJobSucceeded() sweeps the job's prefix.
    if (!deleted.ok() && deleted.code() != StatusCode::kNotFound) {
      spdlog::warn("bigquery destination: could not delete gs://{}/{}: {}", bucket_, object,
                   deleted.message());
    }
  }
}

Status BigqueryDestination::SubmitPending(bool all) {
  while (!pending_.empty() && (all || static_cast<int64_t>(pending_.size()) >= files_per_job_)) {
    // One job per table, over the oldest files of that table, up to files_per_job_.
    std::string table_name = pending_.front().table;
    InFlightJob job{.table = table_name};
    int64_t first_sequence = pending_.front().sequence;
    std::vector<PendingFile> rest;
    for (PendingFile& file : pending_) {
      if (file.table == table_name && static_cast<int64_t>(job.objects.size()) < files_per_job_) {
        job.objects.push_back(file.object);
      } else {
        rest.push_back(std::move(file));
      }
    }
    BIZON_ASSIGN_OR_RETURN(TableState * table,
                           TableFor(table_name == default_table_ ? "" : table_name));
    BIZON_RETURN_IF_ERROR(Prepare(*table));
    job.job_id = BigqueryJobId("load", sync_.job_id, table_name, first_sequence);
    Value configuration = LoadConfig(*table, job.objects).ToJson();
    auto submitted = EnsureJob(job.job_id, configuration, /*wait=*/false);
    if (!submitted) return BigqueryDestinationContext(submitted.error(), "BigQuery async load");
    in_flight_.push_back(std::move(job));
    pending_ = std::move(rest);
  }
  return Status::Ok();
}

Status BigqueryDestination::CompleteOldest() {
  InFlightJob job = std::move(in_flight_.front());
  in_flight_.erase(in_flight_.begin());
  BIZON_ASSIGN_OR_RETURN(TableState * table,
                         TableFor(job.table == default_table_ ? "" : job.table));
  BIZON_RETURN_IF_ERROR(Prepare(*table));
  Value configuration = LoadConfig(*table, job.objects).ToJson();
  // job_id is the id without a retry suffix: EnsureJob() finds the attempt that ran.
  auto done = EnsureJob(job.job_id, configuration, /*wait=*/true, /*submitted_here=*/true);
  if (!done) {
    in_flight_.insert(in_flight_.begin(), std::move(job));
    return BigqueryDestinationError(
        done.error().code(),
        "BigQuery async load job failed, aborting to preserve cursors: " + done.error().message());
  }
  DeleteObjects(job.objects);
  return Status::Ok();
}

Status BigqueryDestination::ReapDone() {
  while (!in_flight_.empty()) {
    auto job = bigquery_->GetJob(JobRef(in_flight_.front().job_id));
    if (!job || !job->done()) return Status::Ok();
    BIZON_RETURN_IF_ERROR(CompleteOldest());
  }
  return Status::Ok();
}

Value BigqueryDestination::CurrentState() const {
  Value::List tables;
  for (const auto& [name, table] : tables_) tables.emplace_back(name);
  Value state(Value::Map{{"loads", loads_}, {"tables", std::move(tables)}});
  // The columns evolve added or widened (or that the table had beyond its record_schemas
  // entry): a resumed run writes with them.
  Value::List evolved;
  for (const auto& [name, table] : tables_) {
    if (!table.evolved) continue;
    Value::List columns;
    for (const BqColumn& column : table.columns) {
      columns.emplace_back(
          Value::Map{{"name", column.name},
                     {"type", std::string(BqColumnTypeName(column.type))},
                     {"mode", column.mode == BqColumnMode::kRepeated   ? "REPEATED"
                              : column.mode == BqColumnMode::kRequired ? "REQUIRED"
                                                                       : "NULLABLE"}});
    }
    evolved.emplace_back(Value::Map{{"table", name}, {"columns", std::move(columns)}});
  }
  if (!evolved.empty()) state.Set("columns", std::move(evolved));
  if (async_load_) {
    Value::List pending;
    for (const PendingFile& file : pending_) {
      pending.emplace_back(
          Value::Map{{"table", file.table}, {"object", file.object}, {"sequence", file.sequence}});
    }
    Value::List jobs;
    for (const InFlightJob& job : in_flight_) {
      Value::List objects(job.objects.begin(), job.objects.end());
      jobs.emplace_back(Value::Map{
          {"table", job.table}, {"job_id", job.job_id}, {"objects", std::move(objects)}});
    }
    state.Set("pending", std::move(pending));
    state.Set("in_flight", std::move(jobs));
  }
  return state;
}

Result<Value> BigqueryDestination::Write(const RecordBatch& records, int64_t loaded_at_us) {
  if (async_load_) {
    // Only files an earlier cursor recorded go into a job: a job never carries rows that a
    // resumed run would fetch again.
    BIZON_RETURN_IF_ERROR(SubmitPending(false));
  }
  int64_t sequence = ++loads_;
  // Every table's rows are read and checked first: a record a contract refuses fails the write
  // before anything of it is written.
  std::vector<TableWrite> writes;
  for (const auto& [destination_id, rows] : RowsByDestination(records)) {
    BIZON_ASSIGN_OR_RETURN(TableState * table, TableFor(destination_id));
    if (table->shaped) {
      BIZON_RETURN_IF_ERROR(ShapeRows(*table, records, rows, loaded_at_us, writes));
    } else {
      writes.push_back({.table = table, .rows = rows});
    }
  }
  for (TableWrite& write : writes) {
    TableState& table = *write.table;
    if (table.shaped || table.rejected) {
      BIZON_RETURN_IF_ERROR(WriteShaped(write, records, sequence));
      continue;
    }
    BIZON_ASSIGN_OR_RETURN(std::string file, Encode(table, records, write.rows, loaded_at_us));
    BIZON_RETURN_IF_ERROR(LoadFile(table, sequence, file, records, write.rows));
  }
  if (async_load_) {
    while (static_cast<int64_t>(in_flight_.size()) > max_in_flight_) {
      BIZON_RETURN_IF_ERROR(CompleteOldest());
    }
    BIZON_RETURN_IF_ERROR(ReapDone());
  }
  return CurrentState();
}

Status BigqueryDestination::RestoreColumns(const Value& state) {
  const Value* evolved = state.Find("columns");
  if (evolved == nullptr || !evolved->is_list()) return Status::Ok();
  for (const Value& entry : evolved->AsList()) {
    std::string name = entry.GetString("table");
    BIZON_ASSIGN_OR_RETURN(TableState * table, TableFor(name == default_table_ ? "" : name));
    const Value* columns = entry.Find("columns");
    if (columns == nullptr) continue;
    auto parsed = ParseRecordSchema(*columns, "the resumed state's columns of " + name);
    if (!parsed) return BigqueryDestinationContext(parsed.error(), "resuming");
    table->columns = std::move(*parsed);
    table->evolved = true;
  }
  return Status::Ok();
}

Status BigqueryDestination::CheckPartitioning(const TableState& table) {
  auto staging = bigquery_->GetTable(Ref(table.staging));
  if (!staging) return Status::Ok();  // Nothing staged.
  auto main = bigquery_->GetTable(Ref(table.name));
  if (!main) return Status::Ok();  // The first run: the copy creates it.
  if (SameBigqueryLayout(*staging, *main)) return Status::Ok();
  spdlog::warn("bigquery destination: table {} is {}, but this run staged it {}",
               Ref(table.name).ToString(), DescribeBigqueryLayout(*main),
               DescribeBigqueryLayout(*staging));
  if (!enforce_partitioning_) {
    spdlog::warn(
        "bigquery destination: set enforce_partitioning: true to recreate {} with the "
        "configured layout on a full refresh",
        Ref(table.name).ToString());
    return Status::Ok();
  }
  if (sync_.sync_mode == SyncMode::kIncremental) {
    spdlog::warn(
        "bigquery destination: enforce_partitioning acts on full refreshes only; run `bizon "
        "stream reset` to rebuild {}",
        Ref(table.name).ToString());
    return Status::Ok();
  }
  spdlog::warn(
      "bigquery destination: enforce_partitioning: dropping {} so that the publish "
      "recreates it",
      Ref(table.name).ToString());
  Status dropped = bigquery_->DeleteTable(Ref(table.name), true);
  if (!dropped.ok())
    return BigqueryDestinationContext(dropped, "dropping " + Ref(table.name).ToString());
  return Status::Ok();
}

Status BigqueryDestination::Publish(TableState& table) {
  // A merge into the published table itself has nothing left to publish.
  if (table.staging == table.name) return Status::Ok();
  if (table.shaped) {
    // The copy binds columns by position on the emulator and needs the same columns in
    // BigQuery: the published table gets the columns this run added or widened, in the
    // staging table's order (the staging table was made from its columns, new ones last).
    BIZON_ASSIGN_OR_RETURN(auto main, PhysicalColumns(Ref(table.name)));
    if (main) BIZON_RETURN_IF_ERROR(AlterColumns(Ref(table.name), *main, table.target_columns));
  }
  BIZON_RETURN_IF_ERROR(CheckPartitioning(table));
  BigQueryCopyConfig copy;
  copy.sources = {Ref(table.staging)};
  copy.destination = Ref(table.name);
  copy.write_disposition = Replaces(table) ? "WRITE_TRUNCATE" : "WRITE_APPEND";
  copy.create_disposition = "CREATE_IF_NEEDED";
  Value configuration = copy.ToJson();
  auto copied = EnsureJob(BigqueryJobId("publish", sync_.job_id, table.name, 0), configuration,
                          /*wait=*/true);
  if (!copied) {
    std::string message = copied.error().message();
    std::string advice;
    if (message.find("artition") != std::string::npos ||
        message.find("luster") != std::string::npos) {
      advice = Replaces(table)
                   ? " (set enforce_partitioning: true to recreate the table with the new layout)"
                   : " (run `bizon stream reset` to rebuild the table with the new layout)";
    }
    return BigqueryDestinationContext(
        copied.error(), fmt::format("publishing {} to {}{}", Ref(table.staging).ToString(),
                                    Ref(table.name).ToString(), advice));
  }
  auto published = bigquery_->GetTable(Ref(table.name));
  if (!published) {
    return BigqueryDestinationError(StatusCode::kInternal,
                                    fmt::format("Table {} not found", Ref(table.name).ToString()));
  }
  return Status::Ok();
}

Status BigqueryDestination::Finalize() {
  if (async_load_) {
    BIZON_RETURN_IF_ERROR(SubmitPending(true));
    while (!in_flight_.empty()) BIZON_RETURN_IF_ERROR(CompleteOldest());
  }
  if (sync_.sync_mode == SyncMode::kStream) return Status::Ok();
  for (auto& [name, table] : tables_) {
    if (table.shaped && !table.prepared) {
      // Not written by this process (a resumed run with nothing left to fetch), or every
      // record was rejected: what its staging table holds, if it has one, is published.
      BIZON_RETURN_IF_ERROR(KnowColumns(table));
      if (table.target_columns.empty()) continue;
    }
    BIZON_RETURN_IF_ERROR(Publish(table));
  }
  return Status::Ok();
}

void BigqueryDestination::SweepFilesOfAbandonedJob(const std::string& job_id) {
  if (!job_abandoned_ || job_id.empty() || job_id == sync_.job_id) return;
  auto abandoned = job_abandoned_(job_id);
  // Unknown or still alive: its files may still be loaded by it, leave them.
  if (!abandoned || !*abandoned) return;
  auto leftovers =
      gcs_->List(bucket_, fmt::format("{}/{}/{}/", sync_.source_name, sync_.stream_name, job_id));
  if (!leftovers) return;
  std::vector<std::string> names;
  for (const GcsObject& object : *leftovers) names.push_back(object.name);
  if (!names.empty()) {
    spdlog::info("bigquery destination: deleting {} staged files of abandoned job {}", names.size(),
                 job_id);
  }
  DeleteObjects(names);
}

Status BigqueryDestination::OnJobSucceeded() {
  if (sync_.sync_mode != SyncMode::kStream) {
    for (auto& [name, table] : tables_) {
      if (table.staging == table.name) continue;  // A merge into the table itself.
      Status dropped = bigquery_->DeleteTable(Ref(table.staging), true);
      if (!dropped.ok()) {
        spdlog::warn("bigquery destination: could not drop staging table {}: {}",
                     Ref(table.staging).ToString(), dropped.message());
      }
    }
  }
  // Files of loads a dead run uploaded but never recorded.
  auto leftovers = gcs_->List(
      bucket_, fmt::format("{}/{}/{}/", sync_.source_name, sync_.stream_name, sync_.job_id));
  if (leftovers) {
    std::vector<std::string> names;
    for (const GcsObject& object : *leftovers) names.push_back(object.name);
    DeleteObjects(names);
  }
  return Status::Ok();
}

namespace {

std::vector<ConfigRuleViolation> CheckBigqueryConfig(const Value& config, SyncMode sync_mode) {
  return BigqueryConfigViolations(config, sync_mode, [](const DestinationContext& context) {
    auto created = BigqueryDestination::Create(context);
    return created ? Status::Ok() : created.error();
  });
}

}  // namespace

Status RegisterBigqueryDestination(ConnectorRegistry& registry) {
  return registry.AddDestination({
      .name = "bigquery",
      .description = "BigQuery through Avro files staged in Cloud Storage, loaded by load "
                     "jobs and published with copy jobs.",
      .alias = "bigquery",
      .config = {.fields = BigqueryFields(), .unknown_keys = UnknownKeys::kError},
      .supports_reset = true,
      .check_destination_id = CheckBigqueryTableName,
      .check_config = CheckBigqueryConfig,
      .check_pipeline = CheckStreamTableIds,
      .factory = [](const DestinationContext& context) -> Result<std::unique_ptr<Destination>> {
        BIZON_ASSIGN_OR_RETURN(auto destination, BigqueryDestination::Create(context));
        return std::unique_ptr<Destination>(std::move(destination));
      },
  });
}

}  // namespace bizon
