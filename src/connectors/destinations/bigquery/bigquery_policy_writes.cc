// The bigquery destination's writes under a table policy (see bigquery_destination.h): records
// read as change rows (a Debezium event's image, a hard_delete mark), checked against the schema
// contract, then loaded into the table's staging table, or for a merge into a staging table of
// their own from which one MERGE statement applies them.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "bizon/clock.h"
#include "connectors/destinations/bigquery/bigquery_destination.h"
#include "connectors/destinations/bigquery/bigquery_schema_contract.h"
#include "connectors/destinations/bigquery_common/bigquery_merge.h"
#include "connectors/destinations/bigquery_common/bigquery_tables.h"
#include "connectors/destinations/destination_record.h"

namespace bizon {
namespace {

/// How long a merge load's staging table outlives a run that died before dropping it.
constexpr int64_t kMergeStagingLifetimeMs = int64_t{24} * 3600 * 1000;

/// The definition ALTER TABLE ... ADD COLUMN takes: its type (an ARRAY for REPEATED). Always
/// NULLABLE: BigQuery adds no REQUIRED column to a table that has rows.
std::string ColumnDefinition(const BqColumn& column) {
  std::string_view type = BqColumnSqlType(column.type);
  return column.mode == BqColumnMode::kRepeated ? fmt::format("ARRAY<{}>", type)
                                                : std::string(type);
}

/// `known` as the table has its columns: in the table's order, with the table's types (a
/// column widened earlier stays wide), then the known columns the table lacks (NULLABLE, as
/// ALTER TABLE adds them).
std::vector<BqColumn> AlignColumns(const std::vector<BqColumn>& known,
                                   const std::vector<BqColumn>& physical) {
  std::vector<BqColumn> out;
  for (const BqColumn& column : physical) {
    BqColumn merged = column;
    auto declared = std::find_if(known.begin(), known.end(),
                                 [&](const BqColumn& c) { return c.name == column.name; });
    if (declared != known.end()) {
      merged.description = declared->description;
      if (column.mode != BqColumnMode::kRepeated) merged.mode = declared->mode;
    }
    out.push_back(std::move(merged));
  }
  for (const BqColumn& column : known) {
    if (std::none_of(out.begin(), out.end(),
                     [&](const BqColumn& c) { return c.name == column.name; })) {
      BqColumn added = column;
      if (added.mode == BqColumnMode::kRequired) added.mode = BqColumnMode::kNullable;
      out.push_back(std::move(added));
    }
  }
  return out;
}

bool SameColumns(const std::vector<BqColumn>& a, const std::vector<BqColumn>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](auto& x, auto& y) {
           return x.name == y.name && x.type == y.type;
         });
}

/// The `<table>__rejected` row of a refusal.
Value RejectedRow(const RecordBatch& records, size_t record, const ContractRefusal& refusal,
                  const std::string& loaded_at) {
  return Value(Value::Map{
      {"_source_record_id", std::string(records.id(record))},
      {"_bizon_column", refusal.column},
      {"_bizon_reason", refusal.reason},
      {"_bizon_value", refusal.value.is_null() ? Value() : Value(refusal.value.ToJson())},
      {"_source_data", std::string(records.payload(record))},
      {"_bizon_loaded_at", loaded_at},
  });
}

/// discard_row: one rejected row per record, naming every refusal.
ContractRefusal WholeRow(const std::vector<ContractRefusal>& refused) {
  ContractRefusal out;
  std::vector<std::string> columns;
  std::vector<std::string> reasons;
  for (const ContractRefusal& refusal : refused) {
    columns.push_back(refusal.column);
    reasons.push_back(refusal.reason);
  }
  out.column = fmt::format("{}", fmt::join(columns, ", "));
  out.reason = fmt::format("{}", fmt::join(reasons, "; "));
  out.whole_row = true;
  return out;
}

void LogChanges(const std::vector<ColumnChange>& changes, const std::string& table) {
  for (const ColumnChange& change : changes) {
    if (change.from) {
      spdlog::info(
          "bigquery destination: schema_contract evolve widens column {} of {} from {} to {}",
          change.column, table, BqColumnTypeName(*change.from), BqColumnTypeName(change.to));
    } else {
      spdlog::info("bigquery destination: schema_contract evolve adds column {} ({}) to {}",
                   change.column, BqColumnTypeName(change.to), table);
    }
  }
}

}  // namespace

Result<std::optional<std::vector<BqColumn>>> BigqueryDestination::PhysicalColumns(
    const BigQueryTableRef& ref) {
  auto table = bigquery_->GetTable(ref);
  if (!table && table.error().code() == StatusCode::kNotFound) {
    return std::optional<std::vector<BqColumn>>();
  }
  if (!table) return Fail(BigqueryDestinationContext(table.error(), "table " + ref.ToString()));
  // A query's schema, not tables.get's: the emulator records no ALTER TABLE in the latter.
  // WHERE FALSE reads no row (BigQuery bills no bytes for it).
  BigQueryQueryConfig query{.query = fmt::format("SELECT * FROM `{}` WHERE FALSE", ref.ToString())};
  auto answer = bigquery_->Query(query, /*all_pages=*/false);
  if (!answer) {
    return Fail(
        BigqueryDestinationContext(answer.error(), "reading the columns of " + ref.ToString()));
  }
  std::vector<BqColumn> columns;
  for (const BigQueryField& field : answer->schema) {
    auto type = ParseBqColumnType(field.type);
    if (!type) {
      return Fail(BigqueryDestinationError(
          StatusCode::kFailedPrecondition,
          fmt::format("table {} has column {} of type {}, which an unnest table cannot write: {}",
                      ref.ToString(), field.name, field.type, type.error().message())));
    }
    columns.push_back(
        {.name = field.name,
         .type = *type,
         .mode = field.mode == "REPEATED" ? BqColumnMode::kRepeated : BqColumnMode::kNullable});
  }
  return std::optional<std::vector<BqColumn>>(std::move(columns));
}

Status BigqueryDestination::KnowColumns(TableState& table) {
  if (table.columns_known) return Status::Ok();
  // The load target counts when this run keeps it: the published table, or a staging table of
  // this job (a resumed run's). Otherwise the published table tells what earlier runs made.
  std::optional<std::vector<BqColumn>> physical;
  auto target = bigquery_->GetTable(Ref(table.staging));
  bool kept = target && (table.staging == table.name ||
                         target->description == BigqueryStagingOwner(sync_.job_id));
  if (kept) {
    BIZON_ASSIGN_OR_RETURN(physical, PhysicalColumns(Ref(table.staging)));
    if (physical) table.target_columns = *physical;
  } else if (table.staging != table.name) {
    BIZON_ASSIGN_OR_RETURN(physical, PhysicalColumns(Ref(table.name)));
  }
  if (physical) {
    std::vector<BqColumn> aligned = AlignColumns(table.columns, *physical);
    if (!SameColumns(aligned, table.columns)) table.evolved = true;
    table.columns = std::move(aligned);
  }
  table.columns_known = true;
  return Status::Ok();
}

Status BigqueryDestination::AlterColumns(const BigQueryTableRef& ref,
                                         const std::vector<BqColumn>& have,
                                         const std::vector<BqColumn>& want) {
  for (const BqColumn& column : want) {
    auto found = std::find_if(have.begin(), have.end(),
                              [&](const BqColumn& c) { return c.name == column.name; });
    std::string sql;
    if (found == have.end()) {
      sql = fmt::format("ALTER TABLE `{}` ADD COLUMN IF NOT EXISTS `{}` {}", ref.ToString(),
                        column.name, ColumnDefinition(column));
    } else if (found->type != column.type) {
      sql = fmt::format("ALTER TABLE `{}` ALTER COLUMN `{}` SET DATA TYPE {}", ref.ToString(),
                        column.name, BqColumnSqlType(column.type));
    } else {
      continue;
    }
    // Idempotent statements: a resumed run repeats them harmlessly, so any job id does.
    auto altered = RunStatement(BigQueryClient::RandomJobId("bizon_alter"), sql);
    if (!altered) {
      return BigqueryDestinationContext(
          altered.error(), fmt::format("changing column {} of {}", column.name, ref.ToString()));
    }
  }
  return Status::Ok();
}

Result<BigQueryJob> BigqueryDestination::RunStatement(const std::string& job_id,
                                                      const std::string& sql) {
  BigQueryQueryConfig query{.query = sql};
  return EnsureBigqueryJob(*bigquery_, JobRef(job_id), query.ToJson(), /*wait=*/true);
}

Status BigqueryDestination::ShapeRows(TableState& table, const RecordBatch& records,
                                      const std::vector<size_t>& rows, int64_t loaded_at_us,
                                      std::vector<TableWrite>& writes) {
  BIZON_RETURN_IF_ERROR(KnowColumns(table));
  const TablePolicy& policy = table.policy;
  std::optional<SchemaContractCheck> check;
  if (policy.contract != SchemaContract::kExact) check.emplace(policy.contract, table.columns);
  std::string loaded_at;
  AppendRfc3339(loaded_at, loaded_at_us);
  TableWrite write{.table = &table};
  std::vector<ShapedRow> rejected;
  for (size_t row : rows) {
    BIZON_ASSIGN_OR_RETURN(std::optional<ChangeRow> change,
                           ReadChangeRow(records.payload(row), records.id(row), policy));
    // A tombstone, or a delete that an appending table does not write.
    if (!change || (change->deleted && !policy.merges())) continue;
    std::vector<ContractRefusal> refused =
        check ? check->Check(change->row, change->deleted) : std::vector<ContractRefusal>();
    if (!refused.empty()) {
      if (policy.contract == SchemaContract::kEvolve ||
          policy.contract == SchemaContract::kFreeze) {
        return BigqueryDestinationError(
            StatusCode::kInvalidArgument,
            fmt::format("record {} does not fit table {}: {} (schema_contract: {}); nothing of "
                        "this write was written",
                        QuoteDestinationId(records.id(row)), Ref(table.name).ToString(),
                        refused.front().reason, SchemaContractName(policy.contract)));
      }
      bool whole = policy.contract == SchemaContract::kDiscardRow ||
                   std::any_of(refused.begin(), refused.end(),
                               [](const ContractRefusal& r) { return r.whole_row; });
      if (whole) refused = {WholeRow(refused)};
      for (const ContractRefusal& refusal : refused) {
        rejected.push_back({.record = row, .row = RejectedRow(records, row, refusal, loaded_at)});
      }
      if (whole) continue;
    }
    write.shaped.push_back(
        {.record = row, .row = std::move(change->row), .deleted = change->deleted});
  }
  if (check && !check->changes().empty()) {
    LogChanges(check->changes(), Ref(table.name).ToString());
    table.columns = check->columns();
    table.evolved = true;
  }
  writes.push_back(std::move(write));
  if (!rejected.empty()) {
    spdlog::info(
        "bigquery destination: {} values or records refused by schema_contract {} go to {}",
        rejected.size(), SchemaContractName(policy.contract),
        Ref(table.name + "__rejected").ToString());
    writes.push_back({.table = RejectedTableFor(table), .shaped = std::move(rejected)});
  }
  return Status::Ok();
}

Status BigqueryDestination::WriteShaped(TableWrite& write, const RecordBatch& records,
                                        int64_t sequence) {
  TableState& table = *write.table;
  std::vector<size_t> indices;
  indices.reserve(write.shaped.size());
  for (const ShapedRow& row : write.shaped) indices.push_back(row.record);
  if (table.columns.empty()) return Status::Ok();  // Inferred, and no value seen yet.
  if (!table.rejected) {
    bool fresh = table.target_columns.empty();
    BIZON_RETURN_IF_ERROR(Prepare(table));
    if (fresh) table.target_columns = table.columns;
    BIZON_RETURN_IF_ERROR(AlterColumns(Ref(table.staging), table.target_columns, table.columns));
    table.target_columns = table.columns;
  }
  if (write.shaped.empty()) return Status::Ok();
  bool merges = table.policy.merges();
  BIZON_ASSIGN_OR_RETURN(
      auto encoder,
      LoadFileEncoder::Make(merges ? MergeStagingColumns(table.columns) : table.columns,
                            /*unnest=*/true));
  for (size_t i = 0; i < write.shaped.size(); ++i) {
    ShapedRow& shaped = write.shaped[i];
    if (merges) {
      shaped.row.Set(kMergeOrdinalColumn, Value(static_cast<int64_t>(i)));
      shaped.row.Set(kMergeDeletedColumn, Value(shaped.deleted));
    }
    Status appended = encoder->AppendObject(shaped.row, records.id(shaped.record));
    if (!appended.ok()) {
      return appended.WithContext("table " + table.name)
          .WithFailureClass(FailureClass::kDestination);
    }
  }
  BIZON_ASSIGN_OR_RETURN(std::string file, encoder->Finish());
  if (merges) return MergeLoad(write, records, sequence, file);
  return LoadFile(table, sequence, file, records, indices);
}

Status BigqueryDestination::LoadMergeStaging(const TableState& table,
                                             const BigQueryTableRef& staging, int64_t sequence,
                                             const std::string& file) {
  std::vector<BqColumn> columns = MergeStagingColumns(table.columns);
  BigQueryTable wanted{.ref = staging,
                       .schema = ToBigQuerySchema(columns),
                       .expiration_time_ms = NowMicros() / 1000 + kMergeStagingLifetimeMs};
  // One this job made earlier (a resumed run's) is kept, one of another job made again.
  BIZON_RETURN_IF_ERROR(PrepareBigqueryTable(*bigquery_, wanted, /*staged=*/true, sync_.job_id,
                                             /*on_abandoned=*/nullptr));
  BIZON_ASSIGN_OR_RETURN(std::string object, Upload(table, sequence, file));
  BigQueryLoadConfig load;
  load.source_uris = {fmt::format("gs://{}/{}", bucket_, object)};
  load.destination = staging;
  load.schema = wanted.schema;
  // Replaces what the table holds: loading it again (a resumed run) is harmless, so the job
  // needs no deterministic id; the MERGE has one.
  load.write_disposition = "WRITE_TRUNCATE";
  load.create_disposition = "CREATE_NEVER";
  auto loaded =
      bigquery_->RunJob(JobRef(BigQueryClient::RandomJobId("bizon_merge_load")), load.ToJson());
  DeleteObjects({object});
  if (!loaded) {
    return BigqueryDestinationContext(loaded.error(), "loading " + staging.ToString());
  }
  return Status::Ok();
}

Status BigqueryDestination::MergeLoad(TableWrite& write, const RecordBatch& records,
                                      int64_t sequence, const std::string& file) {
  TableState& table = *write.table;
  std::vector<size_t> indices;
  indices.reserve(write.shaped.size());
  for (const ShapedRow& row : write.shaped) indices.push_back(row.record);
  std::string load_id = BigqueryLoadJobId(sync_.job_id, table.name, sequence, records, indices);
  std::string merge_id =
      BigqueryRowsJobId("merge", sync_.job_id, table.name, sequence, records, indices);
  // A table per load, named after the load's rows: a resumed run that cut its flush elsewhere
  // never reads another load's rows.
  BigQueryTableRef staging = Ref(fmt::format("{}__bizon_merge_{}_{}", table.name, sequence,
                                             load_id.substr(load_id.size() - 16)));
  auto earlier = bigquery_->GetJob(JobRef(merge_id));
  if (earlier && earlier->done() && !earlier->error) {
    // The run that died after this MERGE and before its cursor: applied once already.
    spdlog::info("bigquery destination: merge job {} already ran; not running it again", merge_id);
  } else {
    BIZON_RETURN_IF_ERROR(LoadMergeStaging(table, staging, sequence, file));
    BIZON_ASSIGN_OR_RETURN(
        std::string sql, MergeStatement(Ref(table.staging), staging, table.columns, table.policy));
    auto merged = RunStatement(merge_id, sql);
    if (!merged) {
      return BigqueryDestinationContext(merged.error(),
                                        fmt::format("merging {} rows into {}", write.shaped.size(),
                                                    Ref(table.staging).ToString()));
    }
  }
  Status dropped = bigquery_->DeleteTable(staging, /*missing_ok=*/true);
  if (!dropped.ok()) {
    // It expires by itself (kMergeStagingLifetimeMs).
    spdlog::warn("bigquery destination: could not drop merge staging table {}: {}",
                 staging.ToString(), dropped.message());
  }
  return Status::Ok();
}

}  // namespace bizon
