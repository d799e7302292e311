#include "connectors/destinations/file/file_destination.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "connectors/destinations/destination_options.h"
#include "connectors/destinations/destination_record.h"
#include "connectors/destinations/file/local_part_store.h"
#include "connectors/destinations/parquet/parts_destination.h"
#include "connectors/registration.h"

namespace bizon {
namespace {

Status IoError(std::string_view what, const std::string& path) {
  return Status(StatusCode::kUnavailable,
                fmt::format("{} {}: {}", what, path, std::strerror(errno)),
                FailureClass::kDestination);
}

/// Opens for append, writes everything, fsyncs.
Status AppendDurably(const std::string& path, std::string_view data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("cannot open", path);
  while (!data.empty()) {
    ssize_t written = ::write(fd, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      Status error = IoError("cannot write", path);
      ::close(fd);
      return error;
    }
    data.remove_prefix(static_cast<size_t>(written));
  }
  if (::fsync(fd) != 0) {
    Status error = IoError("cannot fsync", path);
    ::close(fd);
    return error;
  }
  ::close(fd);
  return Status::Ok();
}

int64_t FileLength(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return 0;
  return static_cast<int64_t>(info.st_size);
}

Status TruncateTo(const std::string& path, int64_t length) {
  if (length == 0 && FileLength(path) == 0) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return IoError("cannot create", path);
    ::fsync(fd);
    ::close(fd);
    return Status::Ok();
  }
  if (FileLength(path) < length) {
    return Status(StatusCode::kDataLoss,
                  fmt::format("{} is shorter ({} bytes) than its last committed length ({} "
                              "bytes); it was modified outside bizon",
                              path, FileLength(path), length),
                  FailureClass::kDestination);
  }
  if (::truncate(path.c_str(), length) != 0) return IoError("cannot truncate", path);
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  return Status::Ok();
}

void SyncDirectoryOf(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

/// Writes `content` to `path` atomically (temp file, fsync, rename).
Status WriteFileAtomically(const std::string& path, std::string_view content) {
  std::string temp = path + ".tmp";
  ::unlink(temp.c_str());
  BIZON_RETURN_IF_ERROR(AppendDurably(temp, content));
  if (::rename(temp.c_str(), path.c_str()) != 0) return IoError("cannot rename", temp);
  SyncDirectoryOf(path);
  return Status::Ok();
}

Status CopyAppend(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  if (!in) return Status::Ok();  // Nothing staged.
  int fd = ::open(to.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("cannot open", to);
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    std::string_view chunk(buffer.data(), static_cast<size_t>(in.gcount()));
    while (!chunk.empty()) {
      ssize_t written = ::write(fd, chunk.data(), chunk.size());
      if (written < 0) {
        if (errno == EINTR) continue;
        Status error = IoError("cannot append to", to);
        ::close(fd);
        return error;
      }
      chunk.remove_prefix(static_cast<size_t>(written));
    }
  }
  if (::fsync(fd) != 0) {
    Status error = IoError("cannot fsync", to);
    ::close(fd);
    return error;
  }
  ::close(fd);
  return Status::Ok();
}

}  // namespace

Status CheckFileDestinationId(std::string_view destination_id) {
  BIZON_RETURN_IF_ERROR(CheckDestinationIdCharacters(destination_id));
  auto refuse = [&](std::string_view why) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("the file destination writes only inside its working directory, "
                              "so a destination id must not be {}: {}",
                              why, QuoteDestinationId(destination_id)),
                  FailureClass::kDestination);
  };
  if (destination_id.front() == '/') return refuse("an absolute path");
  for (size_t start = 0; start <= destination_id.size();) {
    size_t end = destination_id.find('/', start);
    if (end == std::string_view::npos) end = destination_id.size();
    if (destination_id.substr(start, end - start) == "..") return refuse("a path with '..'");
    start = end + 1;
  }
  return Status::Ok();
}

FileDestination::FileDestination(const DestinationContext& context)
    : sync_(context.sync), job_abandoned_(context.job_abandoned) {
  CommonDestinationOptions common = ReadCommonDestinationOptions(context.config);
  unnest_ = common.unnest;
  default_destination_id_ = std::move(common.destination_id);
  if (default_destination_id_.empty()) {
    default_destination_id_ = sync_.source_name + "_" + sync_.stream_name;
  }
  if (const Value* schemas = context.config.Find("record_schemas");
      schemas != nullptr && schemas->is_list()) {
    for (const Value& schema : schemas->AsList()) {
      std::vector<Column> columns;
      if (const Value* list = schema.Find("record_schema"); list != nullptr && list->is_list()) {
        for (const Value& column : list->AsList()) columns.push_back({column.GetString("name")});
      }
      schemas_[schema.GetString("destination_id")] = std::move(columns);
    }
  }
}

std::string FileDestination::MainPath(std::string_view destination_id) const {
  return std::string(destination_id) + ".json";
}

std::string FileDestination::StagingPath(std::string_view destination_id) const {
  switch (sync_.sync_mode) {
    case SyncMode::kFullRefresh:
      return std::string(destination_id) + "_temp.json";
    case SyncMode::kIncremental:
      return std::string(destination_id) + "_incremental.json";
    case SyncMode::kStream:
      return MainPath(destination_id);
  }
  return MainPath(destination_id);
}

std::string FileDestination::JournalPath(std::string_view destination_id) const {
  return MainPath(destination_id) + ".bizon-append";
}

std::string FileDestination::ManifestPath() const {
  return MainPath(default_destination_id_) + ".bizon-job";
}

Status FileDestination::SaveManifest() const {
  Value files = Value::EmptyMap();
  for (const auto& [id, start] : starts_) files.Set(id, Value(start));
  Value manifest(Value::Map{{"job_id", Value(sync_.job_id)},
                            {"published", Value(published_)},
                            {"files", std::move(files)}});
  return WriteFileAtomically(ManifestPath(), manifest.ToJson() + "\n");
}

Status FileDestination::Track(const std::string& destination_id) {
  bool staged = sync_.sync_mode != SyncMode::kStream;
  int64_t start = staged ? 0 : FileLength(MainPath(destination_id));
  starts_[destination_id] = start;
  BIZON_RETURN_IF_ERROR(SaveManifest());
  if (staged) {
    BIZON_RETURN_IF_ERROR(TruncateTo(StagingPath(destination_id), 0));
    SyncDirectoryOf(StagingPath(destination_id));  // The new file's entry must survive too.
  }
  lengths_[destination_id] = start;
  synced_lengths_[destination_id] = start;
  return Status::Ok();
}

Value FileDestination::CurrentState() const {
  Value files = Value::EmptyMap();
  for (const auto& [id, length] : lengths_) files.Set(id, Value(length));
  return Value(Value::Map{{"files", std::move(files)}});
}

Status FileDestination::Open(const Value& resume_state) {
  std::optional<Value> manifest;
  if (std::ifstream in(ManifestPath()); in) {
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto parsed = Value::FromJson(text);
    if (parsed && parsed->is_map()) {
      manifest = std::move(*parsed);
    } else {
      spdlog::warn("File destination: ignoring the unreadable job manifest {}", ManifestPath());
    }
  }
  const Value* committed = resume_state.Find("files");
  bool own_manifest = manifest && manifest->GetString("job_id") == sync_.job_id;
  if (own_manifest || (committed != nullptr && committed->is_map())) {
    // A resumed job: every file goes back to its committed length, and a file first touched
    // after the last commit back to the length this job found it at.
    if (own_manifest) {
      published_ = manifest->GetBool("published");
      if (const Value* files = manifest->Find("files"); files != nullptr && files->is_map()) {
        for (const auto& [id, start] : files->AsMap()) starts_[id] = start.AsInteger();
      }
    }
    if (committed != nullptr && committed->is_map()) {
      for (const auto& [id, length] : committed->AsMap()) {
        // Without its own manifest (removed by hand), the cursor is all there is to go by.
        if (!starts_.contains(id)) starts_[id] = length.AsInteger();
      }
    }
    for (const auto& [id, start] : starts_) {
      const Value* length = committed != nullptr ? committed->Find(id) : nullptr;
      int64_t target = length != nullptr ? length->AsInteger() : start;
      lengths_[id] = target;
      synced_lengths_[id] = target;
      std::string staging = StagingPath(id);
      if (published_ && sync_.sync_mode == SyncMode::kFullRefresh &&
          !std::filesystem::exists(staging)) {
        continue;  // Finalize() already renamed it over the main file.
      }
      BIZON_RETURN_IF_ERROR(TruncateTo(staging, target));
    }
    return own_manifest ? Status::Ok() : SaveManifest();
  }
  // A fresh job: anything staged belongs to an abandoned job whose rows will be fetched again.
  BIZON_RETURN_IF_ERROR(UndoAbandonedAppend(default_destination_id_));
  return Track(default_destination_id_);
}

Status FileDestination::UndoAbandonedAppend(const std::string& destination_id) {
  std::string journal = JournalPath(destination_id);
  std::ifstream existing(journal);
  if (!existing) return Status::Ok();
  int64_t main_length = -1;
  std::string journal_job;
  existing >> main_length >> journal_job;
  existing.close();
  // The journal outlives its job only when the job stopped between the start of its append and
  // the end of OnJobSucceeded(). A job that did not succeed is read again by this one (its window
  // was never closed), so what it appended must go; a succeeded one's append is complete.
  bool undo = false;
  if (main_length >= 0 && !journal_job.empty() && journal_job != sync_.job_id && job_abandoned_) {
    BIZON_ASSIGN_OR_RETURN(undo, job_abandoned_(journal_job));
  }
  std::string main = MainPath(destination_id);
  if (undo && FileLength(main) > main_length) {
    spdlog::warn(
        "File destination: job {} stopped while appending to {} and was abandoned; truncating it "
        "back to {} bytes, since this job reads those records again",
        journal_job, main, main_length);
    BIZON_RETURN_IF_ERROR(TruncateTo(main, main_length));
  } else {
    spdlog::warn("File destination: removing the append journal {} left by job {}", journal,
                 journal_job);
  }
  ::unlink(journal.c_str());
  return Status::Ok();
}

Status FileDestination::CheckNewDestinationId(std::string_view destination_id) const {
  BIZON_RETURN_IF_ERROR(CheckFileDestinationId(destination_id));
  if (sync_.sync_mode == SyncMode::kStream) return Status::Ok();  // No staging files.
  auto clashes = [&](std::string_view other) {
    return other != destination_id && (StagingPath(destination_id) == MainPath(other) ||
                                       MainPath(destination_id) == StagingPath(other));
  };
  for (const auto& [other, length] : lengths_) {
    if (!clashes(other)) continue;
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("two destination ids of one job would share a file (one's staging "
                              "file is the other's main file): {} and {}",
                              QuoteDestinationId(destination_id), QuoteDestinationId(other)),
                  FailureClass::kDestination);
  }
  return Status::Ok();
}

Status FileDestination::AppendUnnested(std::string& out, std::string_view destination_id,
                                       std::string_view payload, std::string_view record_id) {
  auto schema = schemas_.find(destination_id);
  if (schema == schemas_.end()) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("unnest is on but record_schemas has no entry for destination_id "
                              "'{}'",
                              destination_id),
                  FailureClass::kDestination);
  }
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(payload.data(), payload.size()).get(object)) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("record {} is not a JSON object", record_id),
                  FailureClass::kDestination);
  }
  if (object.size() != schema->second.size()) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("record {} has {} keys but the record_schema of '{}' declares {}",
                              record_id, object.size(), destination_id, schema->second.size()),
                  FailureClass::kDestination);
  }
  out.push_back('{');
  bool first = true;
  for (const Column& column : schema->second) {
    simdjson::dom::element element;
    if (object.at_key(column.name).get(element)) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("record {} has no key '{}' declared in the record_schema of '{}'",
                                record_id, column.name, destination_id),
                    FailureClass::kDestination);
    }
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(out, column.name);
    out.push_back(':');
    out.append(simdjson::minify(element));
  }
  out.push_back('}');
  return Status::Ok();
}

FileDestination::~FileDestination() { CloseOutputs(); }

void FileDestination::CloseOutputs() {
  for (Output& output : outputs_) {
    if (output.fd >= 0) ::close(output.fd);
    output.fd = -1;
  }
  outputs_.clear();
}

Result<FileDestination::Output*> FileDestination::OutputFor(std::string_view destination_id) {
  for (Output& output : outputs_) {
    if (output.destination_id == destination_id) return &output;
  }
  std::string path = StagingPath(destination_id);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Fail(IoError("cannot open", path));
  outputs_.push_back({.destination_id = std::string(destination_id), .fd = fd});
  outputs_.back().pending.reserve(kChunkBytes + (kChunkBytes >> 2));
  return &outputs_.back();
}

Status FileDestination::TrackNewIds(const RecordBatch& records) {
  std::vector<std::string_view> fresh;
  auto note = [&](std::string_view id) -> Status {
    if (lengths_.contains(id)) return Status::Ok();
    for (std::string_view seen : fresh) {
      if (seen == id) return Status::Ok();
    }
    // Checked before anything of this batch reaches a file: a refused id fails the run with
    // nothing of its batch written, and no file outside the working directory ever opened.
    BIZON_RETURN_IF_ERROR(CheckNewDestinationId(id));
    fresh.push_back(id);
    return Status::Ok();
  };
  if (!records.has_destination_ids()) {
    if (!records.empty()) BIZON_RETURN_IF_ERROR(note(default_destination_id_));
  } else {
    for (size_t i = 0; i < records.size(); ++i) {
      std::string_view id = records.destination_id(i);
      BIZON_RETURN_IF_ERROR(note(id.empty() ? std::string_view(default_destination_id_) : id));
    }
  }
  for (std::string_view id : fresh) BIZON_RETURN_IF_ERROR(Track(std::string(id)));
  return Status::Ok();
}

Status FileDestination::WriteOut(Output& output) {
  std::string_view data = output.pending;
  while (!data.empty()) {
    ssize_t written = ::write(output.fd, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return IoError("cannot write", StagingPath(output.destination_id));
    }
    data.remove_prefix(static_cast<size_t>(written));
  }
  lengths_[output.destination_id] += static_cast<int64_t>(output.pending.size());
  output.unsynced = output.unsynced || !output.pending.empty();
  output.pending.clear();
  return Status::Ok();
}

Status FileDestination::AppendRecords(const RecordBatch& records, int64_t loaded_at_us) {
  BIZON_RETURN_IF_ERROR(TrackNewIds(records));
  writer_.StartBatch();
  Output* output = nullptr;  // Of the previous record: consecutive records mostly share it.
  for (size_t i = 0; i < records.size(); ++i) {
    std::string_view id = records.destination_id(i);
    if (id.empty()) id = default_destination_id_;
    if (output == nullptr || output->destination_id != id) {
      BIZON_ASSIGN_OR_RETURN(output, OutputFor(id));
    }
    std::string& out = output->pending;
    if (unnest_) {
      BIZON_RETURN_IF_ERROR(AppendUnnested(out, id, records.payload(i), records.id(i)));
    } else {
      writer_.Append(out, records, i, loaded_at_us);
    }
    out.push_back('\n');
    if (out.size() >= kChunkBytes) BIZON_RETURN_IF_ERROR(WriteOut(*output));
  }
  return Status::Ok();
}

void FileDestination::CutBackToSynced() {
  for (Output& output : outputs_) {
    output.pending.clear();
    auto synced = synced_lengths_.find(output.destination_id);
    if (synced == synced_lengths_.end()) continue;
    if (::ftruncate(output.fd, synced->second) != 0) {
      spdlog::warn("File destination: cannot cut {} back to {} bytes: {}",
                   StagingPath(output.destination_id), synced->second, std::strerror(errno));
    }
    lengths_[output.destination_id] = synced->second;
  }
}

Status FileDestination::Append(const RecordBatch& records, int64_t loaded_at_us) {
  Status appended = AppendRecords(records, loaded_at_us);
  if (!appended.ok()) CutBackToSynced();
  return appended;
}

Result<Value> FileDestination::Sync() {
  for (Output& output : outputs_) {
    if (Status written = WriteOut(output); !written.ok()) {
      CutBackToSynced();
      return Fail(written);
    }
    if (!output.unsynced) continue;
    if (::fsync(output.fd) != 0)
      return Fail(IoError("cannot fsync", StagingPath(output.destination_id)));
    output.unsynced = false;
    // The synced pages are clean: drop them from the page cache rather than let gigabytes of
    // output crowd it, whose reclaim the kernel would otherwise charge to this process (10M kafka
    // records, 7.6 GB: 8.4 s of system time without, 2.6 s with). Advice: a failure changes
    // nothing but the cache, so it is ignored.
    (void)::posix_fadvise(output.fd, 0, 0, POSIX_FADV_DONTNEED);
  }
  synced_lengths_ = lengths_;
  return CurrentState();
}

Result<Value> FileDestination::Write(const RecordBatch& records, int64_t loaded_at_us) {
  BIZON_RETURN_IF_ERROR(Append(records, loaded_at_us));
  return Sync();
}

Status FileDestination::Finalize() {
  // Whatever was appended is durable before anything is published.
  if (auto synced = Sync(); !synced) return synced.error();
  CloseOutputs();
  if (sync_.sync_mode == SyncMode::kFullRefresh && !published_) {
    // Recorded before the first rename: a resume after it must not expect the staging files.
    published_ = true;
    BIZON_RETURN_IF_ERROR(SaveManifest());
  }
  for (const auto& [id, length] : lengths_) {
    std::string main = MainPath(id);
    std::string staging = StagingPath(id);
    switch (sync_.sync_mode) {
      case SyncMode::kFullRefresh:
        if (std::filesystem::exists(staging)) {
          if (::rename(staging.c_str(), main.c_str()) != 0)
            return IoError("cannot rename", staging);
          SyncDirectoryOf(main);
        } else if (!std::filesystem::exists(main)) {
          return Status(StatusCode::kDataLoss,
                        fmt::format("staging file {} vanished before it was published", staging),
                        FailureClass::kDestination);
        }
        break;
      case SyncMode::kIncremental: {
        std::string journal = JournalPath(id);
        std::ifstream existing(journal);
        int64_t main_length = -1;
        std::string journal_job;
        if (existing >> main_length >> journal_job && journal_job == sync_.job_id) {
          // A previous attempt of this job crashed during the append: redo it from the start.
          BIZON_RETURN_IF_ERROR(TruncateTo(main, main_length));
        } else {
          main_length = FileLength(main);
          BIZON_RETURN_IF_ERROR(
              WriteFileAtomically(journal, fmt::format("{} {}\n", main_length, sync_.job_id)));
        }
        BIZON_RETURN_IF_ERROR(CopyAppend(staging, main));
        break;
      }
      case SyncMode::kStream:
        break;
    }
  }
  return Status::Ok();
}

Status FileDestination::OnJobSucceeded() {
  if (sync_.sync_mode == SyncMode::kStream) return Status::Ok();
  if (sync_.sync_mode == SyncMode::kIncremental) {
    for (const auto& [id, length] : lengths_) {
      ::unlink(StagingPath(id).c_str());
      ::unlink(JournalPath(id).c_str());
    }
  }
  ::unlink(ManifestPath().c_str());  // The job is over; the next one writes its own.
  return Status::Ok();
}

namespace {

/// The file destination's options, declared once: the registry's spec and the readers use it.
std::vector<FieldSpec> FileFields() {
  return {{.name = "format",
           .type = FieldType::kEnum,
           .description = "Output format: json (NDJSON, one file per table) or parquet (a "
                          "directory of part files per table).",
           .default_value = Value("json"),
           .enum_values = {"json", "parquet"}},
          ParquetCompressionField(),
          ParquetPartSizeField()};
}

/// The file destination's `format: parquet`: Parquet parts in directories (LocalPartStore).
Result<std::unique_ptr<Destination>> MakeParquetFileDestination(
    const DestinationContext& context, std::string default_destination_id) {
  PartsDestinationOptions options{.sync = context.sync,
                                  .job_abandoned = context.job_abandoned,
                                  .default_destination_id = std::move(default_destination_id),
                                  .label = "file destination"};
  OptionReader declared(Option::Object("config", FileFields()), context.config);
  BIZON_RETURN_IF_ERROR(ReadPartsOptions(declared, context.config, options));
  auto store = std::make_unique<LocalPartStore>(options.default_destination_id);
  if (Status checked = store->CheckId(options.default_destination_id); !checked.ok()) {
    return Fail(checked.WithFailureClass(FailureClass::kConfig));
  }
  return std::unique_ptr<Destination>(
      std::make_unique<PartsDestination>(std::move(options), std::move(store)));
}

/// The `format` of a file destination block.
Result<std::string> FileFormat(const Value& config) {
  OptionReader declared(Option::Object("config", FileFields()), config);
  std::string format = declared.String("format");
  BIZON_RETURN_IF_ERROR(declared.status());
  return format;
}

std::vector<ConfigRuleViolation> CheckFileConfig(const Value& config, SyncMode) {
  Result<std::string> format = FileFormat(config);
  if (!format) return {{.path = "format", .message = format.error().message()}};
  if (*format != "parquet") return {};
  return CheckParquetOutput(config);
}

}  // namespace

Status RegisterFileDestination(ConnectorRegistry& registry) {
  return registry.AddDestination({
      .name = "file",
      .description = "Local files: NDJSON, or Parquet parts in a directory per table; published "
                     "atomically, exactly once.",
      .alias = "file",
      .config = {.fields = FileFields(), .unknown_keys = UnknownKeys::kError},
      .check_destination_id = [](std::string_view destination_id,
                                 SyncMode) { return CheckFileDestinationId(destination_id); },
      .check_config = CheckFileConfig,
      .factory = [](const DestinationContext& context) -> Result<std::unique_ptr<Destination>> {
        auto destination = std::make_unique<FileDestination>(context);
        // `config validate` refuses a bad configured id; this guards every other way in.
        if (Status checked = CheckFileDestinationId(destination->default_destination_id());
            !checked.ok()) {
          return Fail(checked.WithFailureClass(FailureClass::kConfig));
        }
        BIZON_ASSIGN_OR_RETURN(std::string format, FileFormat(context.config));
        if (format == "parquet") {
          return MakeParquetFileDestination(context, destination->default_destination_id());
        }
        return destination;
      },
  });
}

}  // namespace bizon
