// bigquery_streaming_v2: rows appended with the BigQuery Storage Write API (see
// bigquery_streaming_v2_destination.h).
#include "connectors/destinations/bigquery_streaming_v2/bigquery_streaming_v2_destination.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <vector>

#include "bizon/clock.h"
#include "bizon/config_spec.h"
#include "common/parallel.h"
#include "connectors/destinations/bigquery/bigquery_destination.h"
#include "connectors/destinations/bigquery_common/bigquery_config_fields.h"
#include "connectors/destinations/bigquery_common/bigquery_merge.h"
#include "connectors/destinations/destination_options.h"
#include "connectors/destinations/destination_record.h"
#include "connectors/registration.h"

namespace bizon {
namespace {

constexpr std::string_view kCommittedStream = "committed_stream";
constexpr std::string_view kDefaultStream = "default_stream";
/// Refused rows quoted in the error; the rest are counted.
constexpr size_t kRowErrorsQuoted = 3;

/// The table-policy options this destination takes: CDC merges by key in sequence-number order,
/// so no merge_strategy or dedup_sort, and it writes the declared columns (no schema_contract).
bool TakesPolicyOption(std::string_view name) {
  return name == "write_disposition" || name == "primary_key" || name == "hard_delete" ||
         name == "change_format";
}

/// Whether `name` is one of the table-policy options (common/write_disposition.h).
bool IsTablePolicyOption(std::string_view name) {
  std::vector<FieldSpec> options = TablePolicyFields();
  return std::any_of(options.begin(), options.end(),
                     [&](const FieldSpec& option) { return option.name == name; });
}

std::vector<FieldSpec> BigqueryStreamingV2Fields() {
  std::vector<FieldSpec> fields = BigqueryDatasetFields();
  FieldSpec record_schemas = BigqueryRecordSchemasField();
  std::erase_if(record_schemas.items[0].fields, [](const FieldSpec& field) {
    return IsTablePolicyOption(field.name) && !TakesPolicyOption(field.name);
  });
  const std::vector<FieldSpec> own = {
      BigqueryTimePartitioningField(/*nullable=*/true),
      BigqueryEnforcePartitioningField(),
      BigqueryAuthenticationField(),
      BigqueryMaxRowsPerRequestField(),
      std::move(record_schemas),
      BigqueryTablePrefixField(),
      BigqueryWriteModeField(),
      {.name = "max_staleness_minutes",
       .type = FieldType::kInteger,
       .description = "write_disposition merge: the max_staleness of the change data capture "
                      "tables bizon creates, in minutes (how old the changes applied to a "
                      "query's answer may be; larger is cheaper). 0 leaves it unset: every "
                      "query applies every change.",
       .nullable = false,
       .default_value = 15,
       .minimum = 0},
  };
  fields.insert(fields.end(), own.begin(), own.end());
  for (FieldSpec& policy : WriteDispositionFields()) {
    if (TakesPolicyOption(policy.name)) fields.push_back(std::move(policy));
  }
  return fields;
}

/// bigquery_streaming: no staging table to enforce partitioning on, and appends only.
std::vector<FieldSpec> BigqueryStreamingLegacyFields() {
  std::vector<FieldSpec> fields = BigqueryDatasetFields();
  const std::vector<FieldSpec> own = {
      BigqueryTimePartitioningField(/*nullable=*/true),
      BigqueryAuthenticationField(),
      BigqueryMaxRowsPerRequestField(),
      BigqueryRecordSchemasField(),
      BigqueryTablePrefixField(),
      BigqueryWriteModeField(),
  };
  fields.insert(fields.end(), own.begin(), own.end());
  return fields;
}

/// The table policies this destination takes: merge through CDC into the published table
/// (incremental and stream runs, unnest), change formats; no schema contract. The legacy flavor
/// only appends.
Status CheckStreamingPolicies(const TablePolicies& policies, const Value& config, bool unnest,
                              const BigqueryRecordSchemas& schemas, SyncMode sync_mode,
                              BigqueryStreamingFlavor flavor) {
  auto fail = [](std::string_view option, std::string_view message) {
    return InvalidArgumentError(fmt::format("destination.config.{}: {}", option, message));
  };
  bool legacy = flavor == BigqueryStreamingFlavor::kLegacy;
  if (legacy && config.Find("record_schemas") != nullptr) {
    for (const auto& [id, columns] : schemas.columns) {
      const TablePolicy& policy = policies.For(id);
      if (policy.merges() || policy.contract != SchemaContract::kExact ||
          policy.disposition == WriteDisposition::kReplace) {
        return fail("record_schemas",
                    "bigquery_streaming appends in every sync mode; use "
                    "bigquery_streaming_v2 (merge) or bigquery (merge, "
                    "schema_contract)");
      }
    }
  }
  if (policies.AnyContract()) {
    return fail("schema_contract",
                "bigquery_streaming_v2 writes the record_schemas columns as declared; "
                "schema_contract is the bigquery destination's");
  }
  if (!policies.AnyMerge()) return Status::Ok();
  if (!unnest) {
    return fail("write_disposition",
                "merge needs unnest: true: the primary_key columns are record_schemas columns");
  }
  if (sync_mode == SyncMode::kFullRefresh) {
    return fail("write_disposition",
                "merge writes changes into the published table through BigQuery's change data "
                "capture; run it as an incremental or stream pipeline");
  }
  for (const auto& [id, columns] : schemas.columns) {
    const TablePolicy& policy = policies.For(id);
    if (!policy.merges()) continue;
    if (std::string problem = CheckMergeColumns(policy, columns); !problem.empty()) {
      return fail("primary_key", problem.substr(problem.find(": ") + 2));
    }
    if (policy.dedup_sort) {
      return fail("dedup_sort",
                  "bigquery_streaming_v2 orders a key's changes by _CHANGE_SEQUENCE_NUMBER (the "
                  "kafka partition and offset); dedup_sort is the bigquery destination's");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string ChangeSequenceNumber(const std::vector<uint64_t>& sections) {
  std::string out;
  for (uint64_t section : sections) {
    if (!out.empty()) out.push_back('/');
    fmt::format_to(std::back_inserter(out), "{:016X}", section);
  }
  return out;
}

std::vector<FieldSpec> BigqueryStreamingFields(BigqueryStreamingFlavor flavor) {
  return flavor == BigqueryStreamingFlavor::kLegacy ? BigqueryStreamingLegacyFields()
                                                    : BigqueryStreamingV2Fields();
}

FieldSpec BigqueryWriteModeField() {
  return {.name = "write_mode",
          .type = FieldType::kEnum,
          .description =
              "committed_stream: each write appends to PENDING write streams that are committed "
              "once the destination cursor covering them is recorded, so a resumed run writes "
              "every row once. default_stream: append to the table's _default stream as the "
              "original does "
              "(at-least-once: a retried or resumed append can be written twice).",
          .nullable = false,
          .default_value = std::string(kCommittedStream),
          .enum_values = {std::string(kCommittedStream), std::string(kDefaultStream)}};
}

namespace {

/// A table id as SQL quotes it: `project.dataset.table`.
std::string Quoted(const BigQueryTableRef& ref) { return fmt::format("`{}`", ref.ToString()); }

/// The raw-mode row of record `i`: the six _source_/_bizon_ columns, timestamps in RFC 3339.
std::string RawRow(const RecordBatch& records, size_t i, int64_t loaded_at_us) {
  std::string out = "{\"_source_record_id\":";
  AppendJsonStringFast(out, records.id(i));
  out += ",\"_source_timestamp\":\"";
  AppendRfc3339(out, records.timestamp_us(i));
  out += "\",\"_source_data\":";
  AppendJsonStringFast(out, records.payload(i));
  out += ",\"_bizon_extracted_at\":\"";
  AppendRfc3339(out, records.extracted_at_us(i));
  out += "\",\"_bizon_loaded_at\":\"";
  AppendRfc3339(out, loaded_at_us);
  out += "\",\"_bizon_id\":\"";
  out += NewUuidHex();
  out += "\"}";
  return out;
}

/// The PARTITION BY expression of `partitioning` over `columns` (spec 8.3); empty: none.
Result<std::string> PartitionExpression(const std::optional<BigQueryTimePartitioning>& partitioning,
                                        const std::vector<BqColumn>& columns,
                                        const BigQueryTableRef& table) {
  if (!partitioning) return std::string();
  if (partitioning->field.empty()) return std::string("_PARTITIONDATE");
  auto column = std::find_if(columns.begin(), columns.end(),
                             [&](const BqColumn& c) { return c.name == partitioning->field; });
  if (column == columns.end()) {
    return Fail(BigqueryDestinationError(
        StatusCode::kFailedPrecondition,
        fmt::format("Cannot publish {}: its partition field '{}' is not a column of the table",
                    table.ToString(), partitioning->field)));
  }
  const std::string& window = partitioning->type;
  switch (column->type) {
    case BqColumnType::kTimestamp:
      return fmt::format("TIMESTAMP_TRUNC(`{}`, {})", column->name, window);
    case BqColumnType::kDatetime:
      return fmt::format("DATETIME_TRUNC(`{}`, {})", column->name, window);
    case BqColumnType::kDate:
      if (window == "DAY") return fmt::format("`{}`", column->name);
      return fmt::format("DATE_TRUNC(`{}`, {})", column->name, window);
    default:
      return Fail(BigqueryDestinationError(
          StatusCode::kFailedPrecondition,
          fmt::format("Cannot publish {}: its partition field '{}' is not a TIMESTAMP, DATE or "
                      "DATETIME column",
                      table.ToString(), partitioning->field)));
  }
}

}  // namespace

BigqueryStreamingV2Destination::BigqueryStreamingV2Destination(const DestinationContext& context,
                                                               BigqueryStreamingFlavor flavor)
    : sync_(context.sync),
      large_records_(context.large_records),
      flavor_(flavor),
      name_(flavor == BigqueryStreamingFlavor::kLegacy ? "bigquery_streaming"
                                                       : "bigquery_streaming_v2") {}

bool BigqueryStreamingV2Destination::Staged() const {
  return flavor_ == BigqueryStreamingFlavor::kV2 && sync_.sync_mode != SyncMode::kStream;
}

BigqueryStreamingV2Destination::~BigqueryStreamingV2Destination() = default;

Result<std::unique_ptr<BigqueryStreamingV2Destination>> BigqueryStreamingV2Destination::Create(
    const DestinationContext& context, BigqueryStreamingV2Connection connection,
    BigqueryStreamingFlavor flavor) {
  std::unique_ptr<BigqueryStreamingV2Destination> destination(
      new BigqueryStreamingV2Destination(context, flavor));
  BigqueryStreamingV2Destination& d = *destination;
  const Value& config = context.config;
  d.connection_ = std::move(connection);
  d.min_bytes_per_stream_ = d.connection_.min_bytes_per_stream > 0
                                ? d.connection_.min_bytes_per_stream
                                : kMinBytesPerParallelStream;
  BIZON_RETURN_IF_ERROR(d.ReadOptions(config));
  if (d.project_.empty() || d.dataset_.empty()) {
    return Fail(InvalidArgumentError("destination.config: project_id and dataset_id are required"));
  }
  BIZON_ASSIGN_OR_RETURN(d.schemas_, ParseBigqueryRecordSchemas(config, d.unnest_));
  BIZON_ASSIGN_OR_RETURN(d.policies_, ReadTablePolicies(config));
  BIZON_RETURN_IF_ERROR(CheckStreamingPolicies(d.policies_, config, d.unnest_, d.schemas_,
                                               d.sync_.sync_mode, flavor));
  if (d.unnest_ && d.schemas_.columns.empty()) {
    return Fail(InvalidArgumentError(
        "destination.config.unnest: At least one `record_schemas` must be provided if `unnest` "
        "is set to True."));
  }
  // Unnest with a single record schema: it names the table (spec 8.2 step 1).
  if (d.unnest_ && d.default_destination_id_.empty() && d.schemas_.columns.size() == 1) {
    d.default_destination_id_ = d.schemas_.columns.begin()->first;
  }
  const Value* time_partitioning = config.Find("time_partitioning");
  if (time_partitioning != nullptr && time_partitioning->is_null()) {
    d.partitioning_.reset();  // An explicit null: unpartitioned tables.
  } else {
    std::map<std::string, std::vector<BqColumn>, std::less<>> none;
    auto partitioning = ResolveBigqueryPartitioning(time_partitioning, d.unnest_,
                                                    d.unnest_ ? d.schemas_.columns : none);
    if (!partitioning) {
      // As the original: a warning, since the layout only matters when a table is created (a
      // stream's table exists already, and BigQuery keeps its own layout); creating one with
      // it fails then (RefuseBadPartitionFor).
      const Value* field =
          time_partitioning != nullptr ? time_partitioning->Find("field") : nullptr;
      d.partition_problem_ = partitioning.error().message() +
                             BigqueryConfigLine(field != nullptr ? field : time_partitioning);
      spdlog::warn(
          "bigquery_streaming_v2 destination: {}; partitioning is only applied when a table is "
          "created, which then fails",
          d.partition_problem_);
      d.partitioning_.reset();
    } else {
      d.partitioning_ = *partitioning;
    }
  }
  return destination;
}

Status BigqueryStreamingV2Destination::ReadOptions(const Value& config) {
  OptionReader options(Option::Object("config", BigqueryStreamingFields(flavor_)), config);
  project_ = StringOrEmpty(options, "project_id");
  dataset_ = StringOrEmpty(options, "dataset_id");
  dataset_location_ = options.String("dataset_location");
  committed_ = options.String("write_mode") == kCommittedStream;
  max_rows_per_request_ = std::clamp<int64_t>(options.Integer("bq_max_rows_per_request"), 1, 10000);
  table_prefix_ = options.String("table_prefix");
  service_account_key_ = options.Object("authentication").String("service_account_key");
  // Declared by bigquery_streaming_v2 only: bigquery_streaming has no staging table to drop, and
  // appends (no merge, so no change data capture table).
  if (flavor_ == BigqueryStreamingFlavor::kV2) {
    enforce_partitioning_ = options.Boolean("enforce_partitioning");
    if (int64_t minutes = options.Integer("max_staleness_minutes"); minutes > 0) {
      // BigQuery's INTERVAL text: Y-M D H:M:S.
      max_staleness_ = fmt::format("0-0 0 {}:{}:0", minutes / 60, minutes % 60);
    }
  }
  CommonDestinationOptions common = ReadCommonDestinationOptions(config);
  default_destination_id_ = std::move(common.destination_id);
  unnest_ = common.unnest;
  max_threads_ = std::max<int64_t>(1, common.max_concurrent_threads);
  return options.status();
}

Status BigqueryStreamingV2Destination::Open(const Value& resume_state) {
  std::shared_ptr<GoogleCredentials> credentials;
  if (!service_account_key_.empty()) {
    BIZON_ASSIGN_OR_RETURN(
        credentials,
        MakeGoogleCredentials(
            {.inline_key = service_account_key_,
             .inline_key_origin = "destination.config.authentication.service_account_key",
             .scopes = {std::string(kBigQueryScope)}}));
  }
  if (connection_.credentials) credentials = connection_.credentials;
  BigQueryClientOptions rest_options;
  rest_options.credentials = credentials;
  rest_options.project = project_;
  rest_options.endpoint = connection_.bigquery_endpoint;
  auto bigquery = BigQueryClient::Make(std::move(rest_options));
  if (!bigquery) return BigqueryDestinationContext(bigquery.error(), "BigQuery client");
  bigquery_ = std::move(*bigquery);
  opened_at_us_ = NowMicros();
  BigQueryWriteClientOptions write_options;
  write_options.credentials = credentials;
  write_options.endpoint = connection_.storage_endpoint;
  if (connection_.max_request_bytes > 0) {
    write_options.max_request_bytes = connection_.max_request_bytes;
  }
  // Without offsets nothing stops a request sent after a refused one from being written: send
  // one at a time, so that a refused row is the last thing written.
  if (!committed_) write_options.max_inflight = 1;
  auto writer = BigQueryWriteClient::Make(std::move(write_options));
  if (!writer) return BigqueryDestinationContext(writer.error(), "BigQuery Storage Write client");
  writer_ = std::move(*writer);

  // The dataset is created when missing; destination_id is a full project.dataset.table.
  BIZON_ASSIGN_OR_RETURN(
      BigqueryDatasetTarget target,
      PrepareBigqueryDataset(*bigquery_, project_, dataset_, dataset_location_, /*create=*/true,
                             table_prefix_, default_destination_id_, sync_));
  job_location_ = std::move(target.job_location);
  default_table_ = std::move(target.default_table);

  // A resumed run: the tables the dead run wrote, and where their streams stand.
  writes_ = resume_state.GetInteger("writes", 0);
  if (const Value* tables = resume_state.Find("tables"); tables != nullptr && tables->is_list()) {
    for (const Value& entry : tables->AsList()) {
      std::string id = entry.GetString("table");
      BIZON_ASSIGN_OR_RETURN(TableState * table, TableFor(id == default_table_ ? "" : id));
      BIZON_RETURN_IF_ERROR(Prepare(*table));
    }
  }
  // Its last recorded write may not have been made visible before it died.
  return CommitStreams(resume_state, /*resuming=*/true);
}

Result<BigqueryStreamingV2Destination::TableState*> BigqueryStreamingV2Destination::TableFor(
    std::string_view destination_id) {
  std::string name(destination_id.empty() ? std::string_view(default_table_) : destination_id);
  if (auto found = tables_.find(name); found != tables_.end()) return &found->second;
  BIZON_RETURN_IF_ERROR(CheckDestinationIdCharacters(name));
  TableState table;
  // A full `project.dataset.table`, or a bare name in the configured dataset.
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t dot = name.find('.', start);
    parts.push_back(name.substr(start, dot == std::string::npos ? dot : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  bool usable = (parts.size() == 1 || parts.size() == 3) && name.find('`') == std::string::npos &&
                std::none_of(parts.begin(), parts.end(), [](const auto& p) { return p.empty(); });
  if (!usable) {
    return Fail(BigqueryDestinationError(
        StatusCode::kInvalidArgument,
        fmt::format("BigQuery table id {} is neither 'project.dataset.table' nor a bare table "
                    "name without '`'",
                    QuoteDestinationId(name))));
  }
  table.main = parts.size() == 3
                   ? BigQueryTableRef{.project = parts[0], .dataset = parts[1], .table = parts[2]}
                   : BigQueryTableRef{.project = project_, .dataset = dataset_, .table = parts[0]};
  BIZON_ASSIGN_OR_RETURN(
      BigqueryTableLayout layout,
      BigqueryLayoutFor(schemas_, unnest_, destination_id, default_destination_id_, name));
  table.policy = layout.entry.empty() ? policies_.Default() : policies_.For(layout.entry);
  // A merge writes its changes into the table itself: BigQuery applies them (CDC).
  table.cdc = unnest_ && table.policy.merges();
  table.staging = table.main;
  if (Staged() && !table.cdc) {
    table.staging.table = StagingTableName(table.main.table, sync_.sync_mode);
  }
  table.columns = std::move(layout.columns);
  table.clustering = std::move(layout.clustering);
  BigQuerySchema row_schema = ToBigQuerySchema(table.columns);
  if (table.cdc) {
    // The pseudo-columns of BigQuery's CDC: part of each row's message, never of the table.
    row_schema.push_back({.name = std::string(kChangeTypeColumn), .type = "STRING"});
    row_schema.push_back({.name = std::string(kChangeSequenceColumn), .type = "STRING"});
  }
  auto schema = ProtoRowSchema::Make(row_schema);
  if (!schema)
    return Fail(BigqueryDestinationContext(schema.error(), "table " + table.main.ToString()));
  table.schema = std::move(*schema);
  auto [inserted, unused] = tables_.emplace(name, std::move(table));
  return &inserted->second;
}

Status BigqueryStreamingV2Destination::RefuseBadPartitionFor(const BigQueryTableRef& main,
                                                             bool replaces) {
  if (partition_problem_.empty()) return Status::Ok();
  auto existing = bigquery_->GetTable(main);
  if (!existing && existing.error().code() != StatusCode::kNotFound) return existing.error();
  if (existing && !(replaces && enforce_partitioning_)) return Status::Ok();
  return Status(StatusCode::kInvalidArgument,
                fmt::format("{}: table {} cannot be created partitioned on it", partition_problem_,
                            main.ToString()),
                FailureClass::kConfig);
}

Status BigqueryStreamingV2Destination::Prepare(TableState& table) {
  if (table.prepared) return Status::Ok();
  if (!Staged()) BIZON_RETURN_IF_ERROR(RefuseBadPartitionFor(table.main, /*replaces=*/false));
  BigQueryTable wanted;
  wanted.ref = table.staging;
  wanted.schema = ToBigQuerySchema(table.columns);
  wanted.time_partitioning = partitioning_;
  wanted.clustering_fields = table.clustering;
  if (table.cdc) {
    wanted.primary_key = table.policy.primary_key;
    wanted.max_staleness = max_staleness_;
  }
  BIZON_RETURN_IF_ERROR(PrepareBigqueryTable(*bigquery_, wanted, Staged() && !table.cdc,
                                             sync_.job_id, /*on_abandoned=*/nullptr,
                                             /*add_missing_columns=*/!Staged()));
  if (table.cdc) {
    auto existing = bigquery_->GetTable(table.staging);
    if (existing && existing->primary_key != table.policy.primary_key) {
      // Made by an earlier run without a key: BigQuery refuses CDC rows into it.
      spdlog::warn(
          "{} destination: table {} has primary key ({}) where merge needs ({}); CDC writes need "
          "it: ALTER TABLE `{}` ADD PRIMARY KEY ({}) NOT ENFORCED",
          name_, table.staging.ToString(), fmt::join(existing->primary_key, ", "),
          fmt::join(table.policy.primary_key, ", "), table.staging.ToString(),
          fmt::join(table.policy.primary_key, ", "));
    }
  }
  table.prepared = true;
  return Status::Ok();
}

std::vector<BigqueryStreamingV2Destination::WritePart> BigqueryStreamingV2Destination::SplitRows(
    TableState& table, const RecordBatch& records, const std::vector<size_t>& rows) const {
  // A committed-stream write spreads a table's rows over up to max_concurrent_threads PENDING
  // streams, encoded and appended in parallel and committed together, once each gets at least
  // min_bytes_per_stream: stream creation is rationed per project, so small writes keep one. The
  // default stream keeps its one long-lived connection per table, so that a refused row stays
  // the last one written.
  size_t parts = 1;
  if (!DefaultStream(table)) {
    size_t bytes = 0;
    for (size_t row : rows) bytes += records.payload(row).size() + records.id(row).size();
    parts = std::clamp<size_t>(bytes / min_bytes_per_stream_, 1,
                               std::min<size_t>(static_cast<size_t>(max_threads_), rows.size()));
  }
  std::vector<WritePart> out(parts);
  for (size_t i = 0; i < parts; ++i) {
    out[i].table = &table;
    auto from = static_cast<std::ptrdiff_t>(rows.size() * i / parts);
    auto to = static_cast<std::ptrdiff_t>(rows.size() * (i + 1) / parts);
    out[i].rows.assign(rows.begin() + from, rows.begin() + to);
  }
  return out;
}

Status BigqueryStreamingV2Destination::WriteRows(WritePart& part, const RecordBatch& records,
                                                 int64_t loaded_at_us) {
  TableState& table = *part.table;
  AppendStreamOptions options{.max_rows_per_request = static_cast<size_t>(max_rows_per_request_)};
  std::unique_ptr<AppendStream> own;
  AppendStream* stream = nullptr;
  std::string pending;
  if (!DefaultStream(table)) {
    // This part's own PENDING stream: its rows stay invisible until the cursor that covers
    // them is recorded (OnCursorRecorded() commits it). What a run writes after its last
    // recorded cursor is never committed, whatever order a resumed run fetches it in.
    auto created = writer_->CreateWriteStream(table.staging, WriteStreamType::kPending);
    if (!created) {
      return BigqueryDestinationContext(created.error(),
                                        "creating a write stream on " + table.staging.ToString());
    }
    pending = created->name;
    options.offsets = true;
    BIZON_ASSIGN_OR_RETURN(own,
                           writer_->OpenAppendStream(pending, table.schema->descriptor(), options));
    stream = own.get();
  } else {
    if (!table.default_append) {
      BIZON_ASSIGN_OR_RETURN(
          table.default_append,
          writer_->OpenAppendStream(BigQueryWriteClient::DefaultStreamName(table.staging),
                                    table.schema->descriptor(), options));
    }
    stream = table.default_append.get();
  }
  Result<int64_t> sent = SendRows(*stream, part, records, loaded_at_us);
  if (DefaultStream(table)) {
    // A failed connection is not used again: the next write opens another.
    if (!sent) table.default_append.reset();
    return sent ? Status::Ok() : sent.error();
  }
  if (!sent) return sent.error();
  BIZON_RETURN_IF_ERROR(own->Close());
  auto held = writer_->FinalizeWriteStream(pending);
  if (!held) return BigqueryDestinationContext(held.error(), "finalizing write stream " + pending);
  if (*held != *sent) {
    return BigqueryDestinationError(
        StatusCode::kDataLoss,
        fmt::format("Write stream {} holds {} rows where {} were sent; it is not committed",
                    pending, *held, *sent));
  }
  part.stream = std::move(pending);
  return Status::Ok();
}

Status BigqueryStreamingV2Destination::RowsOf(const WritePart& part, const RecordBatch& records,
                                              size_t from, size_t to, int64_t loaded_at_us,
                                              std::vector<std::string>& rows,
                                              std::vector<size_t>& sources) const {
  const TableState& table = *part.table;
  for (size_t i = from; i < to; ++i) {
    size_t row = part.rows[i];
    if (!table.cdc && table.policy.change_format == ChangeFormat::kNone) {
      rows.push_back(unnest_ ? std::string(records.payload(row))
                             : RawRow(records, row, loaded_at_us));
      sources.push_back(i);
      continue;
    }
    BIZON_ASSIGN_OR_RETURN(std::optional<ChangeRow> change,
                           ReadChangeRow(records.payload(row), records.id(row), table.policy));
    // A tombstone; a delete, for a table that appends.
    if (!change || (change->deleted && !table.cdc)) continue;
    if (table.cdc) {
      std::string sequence =
          change->kafka_position
              ? ChangeSequenceNumber({static_cast<uint64_t>(change->kafka_position->first),
                                      static_cast<uint64_t>(change->kafka_position->second)})
              : ChangeSequenceNumber({static_cast<uint64_t>(opened_at_us_),
                                      static_cast<uint64_t>(writes_), static_cast<uint64_t>(i)});
      change->row.Set(kChangeTypeColumn, Value(change->deleted ? "DELETE" : "UPSERT"));
      change->row.Set(kChangeSequenceColumn, Value(std::move(sequence)));
    }
    rows.push_back(change->row.ToJson());
    sources.push_back(i);
  }
  return Status::Ok();
}

Result<int64_t> BigqueryStreamingV2Destination::SendRows(AppendStream& stream, WritePart& part,
                                                         const RecordBatch& records,
                                                         int64_t loaded_at_us) const {
  const TableState& table = *part.table;
  const size_t base = stream.rows_given();
  ProtoRowEncoder encoder(*table.schema);
  // Encoded and sent a request's worth at a time, so that a write holds one chunk of JSON and
  // protobuf rows besides the requests in flight, and encoding overlaps the server's work.
  const auto chunk = static_cast<size_t>(max_rows_per_request_);
  std::vector<std::string> json_rows;
  std::vector<std::string> serialized;
  std::vector<size_t> sources;  // The index in part.rows of every row given to the stream.
  int64_t sent = 0;
  Status status = Status::Ok();
  for (size_t from = 0; from < part.rows.size() && status.ok(); from += chunk) {
    size_t to = std::min(part.rows.size(), from + chunk);
    json_rows.clear();
    serialized.clear();
    size_t first = sources.size();
    BIZON_RETURN_IF_ERROR(RowsOf(part, records, from, to, loaded_at_us, json_rows, sources));
    for (size_t i = 0; i < json_rows.size(); ++i) {
      Status encoded = encoder.Encode(json_rows[i], serialized.emplace_back());
      if (!encoded.ok()) {
        return Fail(BigqueryDestinationContext(
            encoded, fmt::format("record {} for {}",
                                 QuoteDestinationId(records.id(part.rows[sources[first + i]])),
                                 table.main.ToString())));
      }
    }
    if (serialized.empty()) continue;
    auto appended = stream.Append(serialized);
    if (!appended) {
      status = appended.error();
      break;
    }
    sent += static_cast<int64_t>(serialized.size() - appended->oversized_rows.size());
    for (size_t index : appended->oversized_rows) {
      if (table.cdc) {
        return Fail(BigqueryDestinationError(
            StatusCode::kInvalidArgument,
            fmt::format("record {} is too large for a Storage Write request, and a change (CDC) "
                        "cannot be loaded by a job",
                        QuoteDestinationId(records.id(part.rows[sources[first + index]])))));
      }
      part.large_json.push_back(std::move(json_rows[index]));
      part.large_records.push_back(part.rows[sources[first + index]]);
    }
  }
  // Every request acknowledged: on a committed stream before it is finalized, on the default
  // stream before Write() returns the state the cursor records.
  if (status.ok()) status = stream.Flush();
  if (status.ok()) return sent;
  const std::vector<AppendRowError>& refused = stream.row_errors();
  if (refused.empty())
    return Fail(BigqueryDestinationContext(status, "appending to " + table.staging.ToString()));
  std::vector<std::string> parts;
  for (const AppendRowError& error : refused) {
    if (parts.size() == kRowErrorsQuoted) break;
    size_t index = error.row - base;  // Into sources.
    std::string id = error.row >= base && index < sources.size()
                         ? QuoteDestinationId(records.id(part.rows[sources[index]]))
                         : fmt::format("#{}", error.row);
    parts.push_back(fmt::format("record {}: {}", id, error.message));
  }
  std::string more = refused.size() > parts.size()
                         ? fmt::format(" (and {} more)", refused.size() - parts.size())
                         : std::string();
  return Fail(BigqueryDestinationError(
      StatusCode::kInvalidArgument,
      fmt::format("BigQuery refused rows written to {}, nothing from them on was written: {}{}",
                  table.staging.ToString(), fmt::join(parts, "; "), more)));
}

bool BigqueryStreamingV2Destination::AlreadyCommitted(const Status& refused,
                                                      const std::string& stream) {
  // A resumed run commits the streams of its last recorded write again, and that write was
  // usually committed before the run died. BigQuery answers STREAM_ALREADY_COMMITTED; the
  // emulator INVALID_STREAM_STATE with "state=COMMITTED" and no commit_time on the stream.
  const std::string& message = refused.message();
  if (message.find("(STREAM_ALREADY_COMMITTED)") != std::string::npos ||
      (message.find("(INVALID_STREAM_STATE)") != std::string::npos &&
       message.find("state=COMMITTED") != std::string::npos)) {
    return true;
  }
  auto info = writer_->GetWriteStream(stream);
  return info && info->commit_time_us > 0;
}

Status BigqueryStreamingV2Destination::OnCursorRecorded(const Value& state) {
  return CommitStreams(state, /*resuming=*/false);
}

Status BigqueryStreamingV2Destination::CommitStreams(const Value& state, bool resuming) {
  if (!committed_) return Status::Ok();
  const Value* tables = state.Find("tables");
  if (tables == nullptr || !tables->is_list()) return Status::Ok();
  for (const Value& entry : tables->AsList()) {
    const Value* listed = entry.Find("uncommitted");
    if (listed == nullptr || !listed->is_list()) continue;
    std::string id = entry.GetString("table");
    BIZON_ASSIGN_OR_RETURN(TableState * table, TableFor(id == default_table_ ? "" : id));
    std::vector<std::string> streams;
    for (const Value& stream : listed->AsList()) {
      std::string name = stream.is_string() ? stream.AsString() : std::string();
      if (!name.empty() && !committed_streams_.contains(name)) streams.push_back(std::move(name));
    }
    if (streams.empty()) continue;
    // The streams of a write (its parts) become visible together: BigQuery commits a batch
    // atomically. A refused batch commits nothing; one at a time then tells which of them were
    // committed already (a resumed run) from which cannot be.
    if (!writer_->BatchCommitWriteStreams(table->staging, streams)) {
      for (const std::string& name : streams) {
        BIZON_RETURN_IF_ERROR(CommitStream(*table, name, resuming));
      }
    }
    for (std::string& name : streams) {
      std::erase(table->uncommitted, name);
      committed_streams_.insert(std::move(name));
    }
  }
  return Status::Ok();
}

Status BigqueryStreamingV2Destination::CommitStream(const TableState& table,
                                                    const std::string& name, bool resuming) {
  auto committed = writer_->BatchCommitWriteStreams(table.staging, {name});
  if (!committed && resuming &&
      committed.error().message().find("(STREAM_NOT_FOUND)") != std::string::npos) {
    // BigQuery no longer knows the stream (its metadata expired, or an emulator restarted).
    // The run that recorded it committed it right after recording, unless it died in
    // between: then its rows are lost to BigQuery, and nothing here can write them again.
    spdlog::warn(
        "{} destination: write stream {} of the resumed job no longer exists; it was "
        "committed after its cursor was recorded unless the run died in between",
        name_, name);
  } else if (!committed && !AlreadyCommitted(committed.error(), name)) {
    return BigqueryDestinationContext(committed.error(), "committing write stream " + name);
  }
  return Status::Ok();
}

Status BigqueryStreamingV2Destination::LoadLargeRows(const WritePart& part,
                                                     const RecordBatch& records) {
  const TableState& table = *part.table;
  for (size_t i = 0; i < part.large_records.size(); ++i) {
    // One job per row, its id made of the row's source id and payload and nothing of the write
    // that carries it: a resumed run that fetches the row again, in whatever write, finds the
    // dead run's job done and loads nothing. Sequence 0 is never a write's number.
    std::string job_id = BigqueryLoadJobId(sync_.job_id, table.staging.ToString(), /*sequence=*/0,
                                           records, {part.large_records[i]});
    BigQueryLoadConfig load;
    load.source_format = "NEWLINE_DELIMITED_JSON";
    load.destination = table.staging;
    load.schema = ToBigQuerySchema(table.columns);
    load.write_disposition = "WRITE_APPEND";
    load.create_disposition = "CREATE_NEVER";
    load.ignore_unknown_values = true;
    spdlog::info(
        "{} destination: record {} is too large for the Storage Write API; loading it into {} by "
        "job {}",
        name_, QuoteDestinationId(records.id(part.large_records[i])), table.staging.ToString(),
        job_id);
    auto loaded = EnsureBigqueryJob(
        *bigquery_, {.project = project_, .job_id = job_id, .location = job_location_},
        load.ToJson(), /*wait=*/true, /*submitted_here=*/false, part.large_json[i] + '\n');
    if (!loaded) {
      return BigqueryDestinationContext(
          loaded.error(), fmt::format("loading record {} into {}",
                                      QuoteDestinationId(records.id(part.large_records[i])),
                                      table.staging.ToString()));
    }
  }
  if (large_records_ && !part.large_records.empty()) {
    large_records_(static_cast<int64_t>(part.large_records.size()), table.main.ToString());
  }
  return Status::Ok();
}

Value BigqueryStreamingV2Destination::CurrentState() const {
  Value::List tables;
  for (const auto& [name, table] : tables_) {
    Value entry(Value::Map{{"table", name}});
    if (committed_) {
      Value::List streams;
      for (const std::string& stream : table.uncommitted) streams.emplace_back(stream);
      entry.Set("uncommitted", Value(std::move(streams)));
    }
    tables.push_back(std::move(entry));
  }
  return Value(Value::Map{{"writes", writes_}, {"tables", std::move(tables)}});
}

Result<Value> BigqueryStreamingV2Destination::Write(const RecordBatch& records,
                                                    int64_t loaded_at_us) {
  ++writes_;
  std::vector<WritePart> parts;
  for (const auto& [destination_id, rows] : RowsByDestination(records)) {
    BIZON_ASSIGN_OR_RETURN(TableState * table, TableFor(destination_id));
    BIZON_RETURN_IF_ERROR(Prepare(*table));
    std::vector<WritePart> split = SplitRows(*table, records, rows);
    std::move(split.begin(), split.end(), std::back_inserter(parts));
  }
  // The tables, and the parts of a large table, are encoded and appended on up to
  // max_concurrent_threads threads. A part that fails fails the write: no stream of it is
  // listed, so none is committed.
  std::vector<Status> results(parts.size());
  ParallelFor(parts.size(), max_threads_,
              [&](size_t i) { results[i] = WriteRows(parts[i], records, loaded_at_us); });
  for (const Status& result : results) BIZON_RETURN_IF_ERROR(result);
  for (WritePart& part : parts) {
    if (!part.stream.empty()) part.table->uncommitted.push_back(std::move(part.stream));
    BIZON_RETURN_IF_ERROR(LoadLargeRows(part, records));
  }
  return CurrentState();
}

Result<BigQueryJob> BigqueryStreamingV2Destination::RunStatement(const std::string& job_id,
                                                                 const std::string& sql) {
  BigQueryQueryConfig query{.query = sql};
  return EnsureBigqueryJob(*bigquery_,
                           {.project = project_, .job_id = job_id, .location = job_location_},
                           query.ToJson(), /*wait=*/true);
}

Status BigqueryStreamingV2Destination::Publish(TableState& table) {
  if (table.cdc) return Status::Ok();  // Written into the table itself.
  std::string job_id = BigqueryJobId("publish", sync_.job_id, table.main.ToString(), 0);
  std::vector<std::string> columns;
  columns.reserve(table.columns.size());
  for (const BqColumn& column : table.columns) columns.push_back(fmt::format("`{}`", column.name));
  std::string list = fmt::format("{}", fmt::join(columns, ", "));
  std::string sql;
  if (sync_.sync_mode == SyncMode::kFullRefresh ||
      table.policy.disposition == WriteDisposition::kReplace) {
    // The layout to declare: the configured one, unless the table exists with another (then
    // its own, so that the run works), or enforce_partitioning drops it first.
    BIZON_RETURN_IF_ERROR(RefuseBadPartitionFor(table.main, /*replaces=*/true));
    std::optional<BigQueryTimePartitioning> partitioning = partitioning_;
    std::vector<std::string> clustering = table.clustering;
    BigQueryTable wanted{.ref = table.main,
                         .time_partitioning = partitioning_,
                         .clustering_fields = table.clustering};
    auto existing = bigquery_->GetTable(table.main);
    if (existing && !SameBigqueryLayout(*existing, wanted)) {
      spdlog::warn("bigquery_streaming_v2 destination: table {} is {}, the configuration asks {}",
                   table.main.ToString(), DescribeBigqueryLayout(*existing),
                   DescribeBigqueryLayout(wanted));
      if (enforce_partitioning_) {
        spdlog::warn("bigquery_streaming_v2 destination: enforce_partitioning: dropping {}",
                     table.main.ToString());
        Status dropped = bigquery_->DeleteTable(table.main, true);
        if (!dropped.ok())
          return BigqueryDestinationContext(dropped, "dropping " + table.main.ToString());
      } else {
        partitioning = existing->time_partitioning;
        clustering = existing->clustering_fields;
      }
    }
    BIZON_ASSIGN_OR_RETURN(std::string partition_by,
                           PartitionExpression(partitioning, table.columns, table.main));
    sql = fmt::format("CREATE OR REPLACE TABLE {}", Quoted(table.main));
    if (!partition_by.empty()) sql += " PARTITION BY " + partition_by;
    if (!clustering.empty()) {
      std::vector<std::string> keys;
      keys.reserve(clustering.size());
      for (const std::string& key : clustering) keys.push_back(fmt::format("`{}`", key));
      sql += fmt::format(" CLUSTER BY {}", fmt::join(keys, ", "));
    }
    sql += fmt::format(" AS SELECT {} FROM {}", list, Quoted(table.staging));
  } else {
    BigQueryTable main{.ref = table.main,
                       .schema = ToBigQuerySchema(table.columns),
                       .time_partitioning = partitioning_,
                       .clustering_fields = table.clustering};
    BIZON_RETURN_IF_ERROR(RefuseBadPartitionFor(table.main, /*replaces=*/false));
    BIZON_RETURN_IF_ERROR(PrepareBigqueryTable(*bigquery_, std::move(main), /*staged=*/false,
                                               sync_.job_id, /*on_abandoned=*/nullptr,
                                               /*add_missing_columns=*/true));
    sql = fmt::format("INSERT INTO {} ({}) SELECT {} FROM {}", Quoted(table.main), list, list,
                      Quoted(table.staging));
  }
  auto published = RunStatement(job_id, sql);
  if (!published) {
    return BigqueryDestinationContext(
        published.error(),
        fmt::format("publishing {} to {}", table.staging.ToString(), table.main.ToString()));
  }
  return Status::Ok();
}

Status BigqueryStreamingV2Destination::Finalize() {
  for (auto& [name, table] : tables_) {
    if (!table.uncommitted.empty()) {
      // The engine records a cursor after every write: a stream still uncommitted here would
      // mean a write whose rows no cursor covers.
      return BigqueryDestinationError(
          StatusCode::kFailedPrecondition,
          fmt::format("write stream {} of {} was never committed; nothing is published",
                      table.uncommitted.front(), table.staging.ToString()));
    }
  }
  if (!Staged()) return Status::Ok();
  for (auto& [name, table] : tables_) BIZON_RETURN_IF_ERROR(Publish(table));
  return Status::Ok();
}

Status BigqueryStreamingV2Destination::OnJobSucceeded() {
  if (!Staged()) return Status::Ok();
  for (auto& [name, table] : tables_) {
    if (table.cdc) continue;  // No staging table.
    Status dropped = bigquery_->DeleteTable(table.staging, true);
    if (!dropped.ok()) {
      // A leftover staging table is dropped by the next run that finds it.
      spdlog::warn("bigquery_streaming_v2 destination: could not drop staging table {}: {}",
                   table.staging.ToString(), dropped.message());
    }
  }
  return Status::Ok();
}

Status RegisterBigqueryStreamingV2Destination(ConnectorRegistry& registry) {
  return registry.AddDestination({
      .name = "bigquery_streaming_v2",
      .description = "BigQuery through the Storage Write API (exactly-once committed streams by "
                     "default), with staging tables published by SQL on full refresh and "
                     "incremental runs.",
      .alias = "bigquery",
      .config = {.fields = BigqueryStreamingFields(BigqueryStreamingFlavor::kV2),
                 .unknown_keys = UnknownKeys::kError},
      .supports_reset = true,
      .check_config =
          [](const Value& config, SyncMode sync_mode) {
            return BigqueryConfigViolations(
                config, sync_mode, [](const DestinationContext& context) {
                  auto created = BigqueryStreamingV2Destination::Create(context);
                  return created ? Status::Ok() : created.error();
                });
          },
      .check_pipeline = CheckStreamTableIds,
      .factory = [](const DestinationContext& context) -> Result<std::unique_ptr<Destination>> {
        BIZON_ASSIGN_OR_RETURN(auto destination, BigqueryStreamingV2Destination::Create(context));
        return std::unique_ptr<Destination>(std::move(destination));
      },
  });
}

}  // namespace bizon
