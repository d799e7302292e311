#include "connectors/destinations/parquet/parts_destination.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "bizon/build_features.h"
#include "common/connector_families.h"
#include "connectors/destinations/destination_options.h"
#include "connectors/destinations/destination_record.h"
#include "connectors/destinations/parquet/ndjson_part_writer.h"

namespace bizon {

std::string PartFileName(std::string_view job_id, int64_t seq, std::string_view extension) {
  return fmt::format("{}-{:06}{}", job_id, seq, extension);
}

std::optional<std::pair<std::string, int64_t>> ParsePartFileName(std::string_view file) {
  if (file.ends_with(".parquet")) {
    file.remove_suffix(std::string_view(".parquet").size());
  } else if (file.ends_with(".json")) {
    file.remove_suffix(std::string_view(".json").size());
  } else {
    return std::nullopt;
  }
  size_t dash = file.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == file.size()) return std::nullopt;
  int64_t seq = 0;
  std::string_view digits = file.substr(dash + 1);
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), seq);
  if (error != std::errc() || end != digits.data() + digits.size() || seq <= 0) {
    return std::nullopt;
  }
  return std::make_pair(std::string(file.substr(0, dash)), seq);
}

Status ReadPartsOptions(OptionReader& options, const Value& config, PartsDestinationOptions& out) {
  std::string compression = options.String("compression");
  out.max_part_bytes = static_cast<int64_t>(options.Number("part_size") * 1024 * 1024);
  BIZON_RETURN_IF_ERROR(options.status());
  std::optional<ParquetCompression> codec = ParseParquetCompression(compression);
  if (!codec) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("destination.config.compression: unknown codec '{}'", compression),
                  FailureClass::kConfig);
  }
  out.compression = *codec;
  out.unnest = ReadCommonDestinationOptions(config).unnest;
  BIZON_ASSIGN_OR_RETURN(auto schemas, ReadParquetSchemas(config));
  for (auto& [id, columns] : schemas) out.schemas[id] = std::move(columns);
  return Status::Ok();
}

PartsDestination::PartsDestination(PartsDestinationOptions options,
                                   std::unique_ptr<PartStore> store)
    : options_(std::move(options)), store_(std::move(store)) {}

PartsDestination::~PartsDestination() = default;

Result<std::optional<PartsDestination::Manifest>> PartsDestination::LoadManifest() {
  BIZON_ASSIGN_OR_RETURN(std::optional<std::string> text, store_->ReadManifest());
  if (!text) return std::optional<Manifest>();
  auto parsed = Value::FromJson(*text);
  if (!parsed || !parsed->is_map()) {
    spdlog::warn("{}: ignoring an unreadable job manifest", options_.label);
    return std::optional<Manifest>();
  }
  Manifest manifest{.job_id = parsed->GetString("job_id"),
                    .published = parsed->GetBool("published")};
  if (const Value* ids = parsed->Find("ids"); ids != nullptr && ids->is_list()) {
    for (const Value& id : ids->AsList()) {
      if (id.is_string()) manifest.ids.push_back(id.AsString());
    }
  }
  return std::optional<Manifest>(std::move(manifest));
}

Status PartsDestination::SaveManifest() {
  Value::List ids;
  for (const auto& [id, table] : tables_) ids.emplace_back(id);
  Value manifest(Value::Map{{"job_id", Value(options_.sync.job_id)},
                            {"ids", Value(std::move(ids))},
                            {"published", Value(published_)}});
  return store_->WriteManifest(manifest.ToJson() + "\n");
}

Status PartsDestination::Open(const Value& resume_state) {
  BIZON_ASSIGN_OR_RETURN(std::optional<Manifest> manifest, LoadManifest());
  const Value* committed = resume_state.Find("parts");
  bool own = manifest && manifest->job_id == options_.sync.job_id;
  if (own || (committed != nullptr && committed->is_map())) {
    return Resume(own ? manifest : std::nullopt, committed);
  }
  if (manifest) BIZON_RETURN_IF_ERROR(ForgetJob(*manifest));
  return Track(options_.default_destination_id);
}

Status PartsDestination::Resume(const std::optional<Manifest>& manifest, const Value* committed) {
  std::vector<std::string> ids;
  if (manifest) {
    ids = manifest->ids;
    published_ = manifest->published;
  }
  if (committed != nullptr && committed->is_map()) {
    for (const auto& [id, parts] : committed->AsMap()) {
      if (std::ranges::find(ids, id) == ids.end()) ids.push_back(id);
    }
  }
  for (const std::string& id : ids) {
    BIZON_RETURN_IF_ERROR(store_->CheckId(id));
    const Value* recorded = committed != nullptr ? committed->Find(id) : nullptr;
    int64_t parts = recorded != nullptr && recorded->is_integer() ? recorded->AsInteger() : 0;
    Table& table = tables_[id];
    table.parts = parts;
    table.synced_parts = parts;
    table.published = options_.sync.sync_mode == SyncMode::kStream ? parts : 0;
    BIZON_RETURN_IF_ERROR(RollBack(id, parts));
    BIZON_RETURN_IF_ERROR(store_->Reopen(id, options_.sync.job_id,
                                         options_.sync.sync_mode == SyncMode::kFullRefresh));
  }
  // Without its own manifest (removed by hand), the cursor is all there is to go by.
  return manifest ? Status::Ok() : SaveManifest();
}

Status PartsDestination::RollBack(const std::string& id, int64_t parts) {
  const std::string& job = options_.sync.job_id;
  BIZON_ASSIGN_OR_RETURN(std::vector<std::string> staged, store_->ListStaged(id));
  for (const std::string& file : staged) {
    auto part = ParsePartFileName(file);
    if (!part) continue;  // Not ours to judge.
    if (part->first != job || part->second > parts) {
      // Written after the last recorded cursor, or by an abandoned job: fetched again.
      BIZON_RETURN_IF_ERROR(store_->DeleteStaged(id, file));
    } else if (options_.sync.sync_mode == SyncMode::kStream) {
      BIZON_RETURN_IF_ERROR(store_->Publish(id, file));  // Its cursor is recorded.
    }
  }
  BIZON_ASSIGN_OR_RETURN(std::vector<std::string> published, store_->ListPublished(id));
  for (const std::string& file : published) {
    auto part = ParsePartFileName(file);
    if (part && part->first == job && part->second > parts) {
      spdlog::warn("{}: removing {}, published after the last recorded cursor", options_.label,
                   store_->Describe(id, file));
      BIZON_RETURN_IF_ERROR(store_->DeletePublished(id, file));
    }
  }
  return Status::Ok();
}

Status PartsDestination::ForgetJob(const Manifest& previous) {
  bool undo = false;
  if (previous.published && options_.sync.sync_mode == SyncMode::kIncremental &&
      options_.job_abandoned) {
    // It stopped during its Finalize() and will never succeed: this job reads its window again,
    // so what it published must go.
    BIZON_ASSIGN_OR_RETURN(undo, options_.job_abandoned(previous.job_id));
  }
  for (const std::string& id : previous.ids) {
    if (!store_->CheckId(id).ok()) continue;  // Never written: a manifest edited by hand.
    BIZON_ASSIGN_OR_RETURN(std::vector<std::string> staged, store_->ListStaged(id));
    for (const std::string& file : staged) {
      auto part = ParsePartFileName(file);
      if (part && part->first == previous.job_id) {
        BIZON_RETURN_IF_ERROR(store_->DeleteStaged(id, file));
      }
    }
    if (!undo) continue;
    BIZON_ASSIGN_OR_RETURN(std::vector<std::string> published, store_->ListPublished(id));
    for (const std::string& file : published) {
      auto part = ParsePartFileName(file);
      if (!part || part->first != previous.job_id) continue;
      spdlog::warn(
          "{}: removing {}, published by job {} which stopped while publishing and was "
          "abandoned; this job reads its records again",
          options_.label, store_->Describe(id, file), previous.job_id);
      BIZON_RETURN_IF_ERROR(store_->DeletePublished(id, file));
    }
  }
  return Status::Ok();
}

Status PartsDestination::Track(const std::string& id) {
  tables_[id];
  BIZON_RETURN_IF_ERROR(SaveManifest());  // Before anything is written for it.
  return store_->Prepare(id, options_.sync.job_id,
                         options_.sync.sync_mode == SyncMode::kFullRefresh);
}

Status PartsDestination::TrackNewIds(const RecordBatch& records) {
  if (!records.has_destination_ids()) {
    if (records.empty() || tables_.contains(options_.default_destination_id)) return Status::Ok();
    return Track(options_.default_destination_id);
  }
  std::vector<std::string> fresh;
  for (size_t i = 0; i < records.size(); ++i) {
    std::string_view id = records.destination_id(i);
    if (id.empty()) id = options_.default_destination_id;
    if (tables_.contains(id) || std::ranges::find(fresh, id) != fresh.end()) continue;
    // Every new id is checked before anything of the batch is written.
    BIZON_RETURN_IF_ERROR(store_->CheckId(id));
    if (options_.unnest && !options_.schemas.contains(id)) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("unnest is on but record_schemas has no entry for destination_id "
                                "{}",
                                QuoteDestinationId(id)),
                    FailureClass::kDestination);
    }
    fresh.emplace_back(id);
  }
  for (const std::string& id : fresh) BIZON_RETURN_IF_ERROR(Track(id));
  return Status::Ok();
}

Result<std::unique_ptr<PartWriter>> PartsDestination::MakeWriter(
    std::optional<std::vector<ParquetColumn>> columns) const {
  if (options_.format == PartFormat::kNdjson) {
    std::optional<std::vector<std::string>> names;
    if (columns) {
      names.emplace();
      for (const ParquetColumn& column : *columns) names->push_back(column.name);
    }
    return std::unique_ptr<PartWriter>(std::make_unique<NdjsonPartWriter>(std::move(names)));
  }
#if BIZON_WITH_DUCKDB
  BIZON_ASSIGN_OR_RETURN(std::unique_ptr<ParquetPartWriter> writer,
                         ParquetPartWriter::Make(std::move(columns), options_.compression));
  return std::unique_ptr<PartWriter>(std::move(writer));
#else
  return Fail(NotBuiltError(fmt::format("{}: {}", options_.label, kParquetNeedsDuckdb), "duckdb"));
#endif
}

Result<PartsDestination::Table*> PartsDestination::WriterFor(std::string_view id) {
  auto found = tables_.find(id);
  if (found == tables_.end()) {
    return Fail(InternalError(fmt::format("{}: destination id {} was not tracked", options_.label,
                                          QuoteDestinationId(id))));
  }
  Table& table = found->second;
  if (table.writer == nullptr) {
    std::optional<std::vector<ParquetColumn>> columns;
    if (options_.unnest) {
      auto schema = options_.schemas.find(id);
      if (schema == options_.schemas.end()) {
        return Fail(Status(StatusCode::kInvalidArgument,
                           fmt::format("unnest is on but record_schemas has no entry for "
                                       "destination_id {}",
                                       QuoteDestinationId(id)),
                           FailureClass::kDestination));
      }
      columns = schema->second;
    }
    BIZON_ASSIGN_OR_RETURN(table.writer, MakeWriter(std::move(columns)));
  }
  return &table;
}

Status PartsDestination::AppendRecords(const RecordBatch& records, int64_t loaded_at_us) {
  BIZON_RETURN_IF_ERROR(TrackNewIds(records));
  Table* table = nullptr;
  std::string_view table_id;  // Of the previous record: consecutive records mostly share it.
  for (size_t i = 0; i < records.size(); ++i) {
    std::string_view id = records.destination_id(i);
    if (id.empty()) id = options_.default_destination_id;
    if (table == nullptr || id != table_id) {
      BIZON_ASSIGN_OR_RETURN(table, WriterFor(id));
      table_id = id;
    }
    if (options_.unnest) {
      BIZON_RETURN_IF_ERROR(table->writer->AppendUnnested(records.payload(i), records.id(i)));
    } else {
      BIZON_RETURN_IF_ERROR(table->writer->AppendRecord(records, i, loaded_at_us));
    }
    if (table->writer->bytes() >= options_.max_part_bytes) {
      // Staged, not published: the next recorded cursor covers it, as any part of this interval.
      BIZON_RETURN_IF_ERROR(StagePart(std::string(table_id), *table));
    }
  }
  return Status::Ok();
}

void PartsDestination::DiscardUnsynced() {
  for (auto& [id, table] : tables_) {
    for (; table.parts > table.synced_parts; --table.parts) {
      std::string file = FileName(table.parts);
      if (Status deleted = store_->DeleteStaged(id, file); !deleted.ok()) {
        // A resume deletes it too: it is past every state this job returned.
        spdlog::warn("{}: {}", options_.label, deleted.message());
      }
    }
    if (table.writer == nullptr) continue;
    if (Status discarded = table.writer->Discard(); !discarded.ok()) {
      // The writer cannot start again: a new one is made at the next append.
      spdlog::warn("{}: {}", options_.label, discarded.message());
      table.writer.reset();
    }
  }
}

Status PartsDestination::Append(const RecordBatch& records, int64_t loaded_at_us) {
  Status appended = AppendRecords(records, loaded_at_us);
  if (!appended.ok()) DiscardUnsynced();  // Back to the last Sync(), as a failed write must be.
  return appended;
}

Status PartsDestination::StagePart(const std::string& id, Table& table) {
  std::string file = FileName(table.parts + 1);
  BIZON_RETURN_IF_ERROR(table.writer->WritePart(store_->ScratchPath(id, file)));
  BIZON_RETURN_IF_ERROR(store_->Stage(id, file));
  ++table.parts;
  return Status::Ok();
}

Result<Value> PartsDestination::Sync() {
  for (auto& [id, table] : tables_) {
    if (table.writer == nullptr || table.writer->rows() == 0) continue;
    if (Status staged = StagePart(id, table); !staged.ok()) {
      DiscardUnsynced();
      return Fail(staged);
    }
  }
  for (auto& [id, table] : tables_) table.synced_parts = table.parts;
  return CurrentState();
}

Result<Value> PartsDestination::Write(const RecordBatch& records, int64_t loaded_at_us) {
  BIZON_RETURN_IF_ERROR(Append(records, loaded_at_us));
  return Sync();
}

std::string PartsDestination::FileName(int64_t seq) const {
  return PartFileName(options_.sync.job_id, seq,
                      options_.format == PartFormat::kNdjson ? ".json" : ".parquet");
}

Value PartsDestination::CurrentState() const {
  Value parts = Value::EmptyMap();
  for (const auto& [id, table] : tables_) parts.Set(id, Value(table.parts));
  return Value(Value::Map{{"parts", std::move(parts)}});
}

Status PartsDestination::OnCursorRecorded(const Value& state) {
  if (options_.sync.sync_mode != SyncMode::kStream) return Status::Ok();
  const Value* parts = state.Find("parts");
  if (parts == nullptr || !parts->is_map()) return Status::Ok();
  for (const auto& [id, count] : parts->AsMap()) {
    auto found = tables_.find(id);
    if (found == tables_.end() || !count.is_integer()) continue;
    Table& table = found->second;
    for (int64_t seq = table.published + 1; seq <= count.AsInteger(); ++seq) {
      BIZON_RETURN_IF_ERROR(store_->Publish(id, FileName(seq)));
      table.published = seq;
    }
  }
  return Status::Ok();
}

Status PartsDestination::Finalize() {
  // The engine syncs before it finalizes; rows still pending would be published uncovered.
  for (const auto& [id, table] : tables_) {
    if (table.writer != nullptr && table.writer->rows() > 0) {
      if (auto synced = Sync(); !synced) return synced.error();
      break;
    }
  }
  if (options_.sync.sync_mode == SyncMode::kStream) return Status::Ok();
  if (!published_) {
    // Recorded before the first part moves: a new job can then undo an abandoned publish.
    published_ = true;
    BIZON_RETURN_IF_ERROR(SaveManifest());
  }
  for (const auto& [id, table] : tables_) {
    std::vector<std::string> files;
    for (int64_t seq = 1; seq <= table.parts; ++seq) {
      files.push_back(FileName(seq));
    }
    if (options_.sync.sync_mode == SyncMode::kFullRefresh) {
      BIZON_RETURN_IF_ERROR(store_->Replace(id, options_.sync.job_id, files));
      continue;
    }
    for (const std::string& file : files) BIZON_RETURN_IF_ERROR(store_->Publish(id, file));
  }
  return Status::Ok();
}

Status PartsDestination::OnJobSucceeded() {
  if (options_.sync.sync_mode == SyncMode::kStream) return Status::Ok();
  for (const auto& [id, table] : tables_) {
    BIZON_RETURN_IF_ERROR(store_->Cleanup(id, options_.sync.job_id));
  }
  return store_->RemoveManifest();  // The job is over; the next one writes its own.
}

}  // namespace bizon
