#include "connectors/destinations/object_store/object_part_store.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "connectors/destinations/destination_record.h"

namespace bizon {
namespace {

constexpr std::string_view kStaging = "_bizon_staging";

Status RefuseId(std::string_view id, std::string_view why) {
  return Status(
      StatusCode::kInvalidArgument,
      fmt::format("an object-store destination id must not {}: {}", why, QuoteDestinationId(id)),
      FailureClass::kDestination);
}

}  // namespace

Status CheckObjectDestinationId(std::string_view id) {
  BIZON_RETURN_IF_ERROR(CheckDestinationIdCharacters(id));
  if (id.front() == '/' || id.back() == '/') return RefuseId(id, "start or end with '/'");
  if (id.starts_with(kStaging)) return RefuseId(id, "start with _bizon_staging");
  for (size_t start = 0; start <= id.size();) {
    size_t end = std::min(id.find('/', start), id.size());
    std::string_view segment = id.substr(start, end - start);
    if (segment.empty()) return RefuseId(id, "hold an empty path segment ('//')");
    if (segment == "." || segment == "..") return RefuseId(id, "hold a '.' or '..' segment");
    start = end + 1;
  }
  return Status::Ok();
}

std::string NormalizeObjectPrefix(std::string_view prefix) {
  while (prefix.starts_with('/')) prefix.remove_prefix(1);
  while (prefix.ends_with('/')) prefix.remove_suffix(1);
  return std::string(prefix);
}

Result<std::unique_ptr<ObjectPartStore>> ObjectPartStore::Make(std::unique_ptr<ObjectStore> store,
                                                               std::string prefix,
                                                               std::string default_destination_id,
                                                               std::string_view pipeline) {
  prefix = NormalizeObjectPrefix(prefix);
  if (!prefix.empty()) prefix += "/";
  // One directory per pipeline and table (the run lock keeps a second process of the pipeline
  // out), so that a run removes what a killed one left half written.
  std::error_code error;
  std::string key =
      fmt::format("{}\n{}\n{}\n{}\n{}", ::getuid(), std::filesystem::current_path(error).string(),
                  pipeline, prefix, default_destination_id);
  std::string scratch = (std::filesystem::temp_directory_path(error) /
                         fmt::format("bizon-parts-{:016x}", std::hash<std::string>{}(key)))
                            .string();
  std::filesystem::remove_all(scratch, error);
  if (!std::filesystem::create_directory(scratch, error) || error) {
    return Fail(
        Status(StatusCode::kUnavailable,
               fmt::format("cannot create the scratch directory {}: {}", scratch, error.message()),
               FailureClass::kDestination));
  }
  return std::unique_ptr<ObjectPartStore>(new ObjectPartStore(
      std::move(store), std::move(prefix), std::move(default_destination_id), scratch));
}

ObjectPartStore::ObjectPartStore(std::unique_ptr<ObjectStore> store, std::string prefix,
                                 std::string default_destination_id, std::string scratch_dir)
    : store_(std::move(store)),
      prefix_(std::move(prefix)),
      default_destination_id_(std::move(default_destination_id)),
      scratch_dir_(std::move(scratch_dir)) {}

ObjectPartStore::~ObjectPartStore() {
  std::error_code ignored;  // Scratch space: what cannot be removed is the system's to clear.
  std::filesystem::remove_all(scratch_dir_, ignored);
}

std::string ObjectPartStore::TablePrefix(std::string_view id) const {
  return fmt::format("{}{}/", prefix_, id);
}

std::string ObjectPartStore::StagingPrefix(std::string_view id) const {
  return fmt::format("{}{}/{}/", prefix_, kStaging, id);
}

Status ObjectPartStore::CheckId(std::string_view id) const { return CheckObjectDestinationId(id); }

Status ObjectPartStore::Prepare(std::string_view id, std::string_view job_id, bool fresh) {
  if (!fresh) return Status::Ok();
  // A full refresh starts from an empty staging area: what is there belongs to abandoned jobs.
  BIZON_ASSIGN_OR_RETURN(std::vector<std::string> staged, ListStaged(id));
  for (const std::string& file : staged) {
    if (!file.starts_with(fmt::format("{}-", job_id))) {
      BIZON_RETURN_IF_ERROR(DeleteStaged(id, file));
    }
  }
  return Status::Ok();
}

std::string ObjectPartStore::ScratchPath(std::string_view id, std::string_view file) const {
  return fmt::format("{}/{:x}-{}", scratch_dir_, std::hash<std::string_view>{}(id), file);
}

Status ObjectPartStore::Stage(std::string_view id, std::string_view file) {
  std::string scratch = ScratchPath(id, file);
  Status uploaded = store_->PutFile(StagingPrefix(id) + std::string(file), scratch);
  ::unlink(scratch.c_str());
  return uploaded;
}

Result<std::vector<std::string>> ObjectPartStore::ListUnder(const std::string& prefix) {
  BIZON_ASSIGN_OR_RETURN(std::vector<StoredObject> objects, store_->List(prefix));
  std::vector<std::string> files;
  for (const StoredObject& object : objects) {
    std::string_view name(object.name);
    if (!name.starts_with(prefix)) continue;
    name.remove_prefix(prefix.size());
    if (name.empty() || name.find('/') != std::string_view::npos) continue;
    files.emplace_back(name);
  }
  std::ranges::sort(files);
  return files;
}

Result<std::vector<std::string>> ObjectPartStore::ListStaged(std::string_view id) {
  return ListUnder(StagingPrefix(id));
}

Result<std::vector<std::string>> ObjectPartStore::ListPublished(std::string_view id) {
  return ListUnder(TablePrefix(id));
}

Status ObjectPartStore::DeleteStaged(std::string_view id, std::string_view file) {
  return store_->Delete(StagingPrefix(id) + std::string(file));
}

Status ObjectPartStore::DeletePublished(std::string_view id, std::string_view file) {
  return store_->Delete(TablePrefix(id) + std::string(file));
}

Status ObjectPartStore::Publish(std::string_view id, std::string_view file) {
  std::string staged = StagingPrefix(id) + std::string(file);
  std::string published = TablePrefix(id) + std::string(file);
  Status copied = store_->Copy(staged, published);
  if (copied.code() == StatusCode::kNotFound) {
    // Published before a crash, then its staged copy deleted: nothing left to do.
    BIZON_ASSIGN_OR_RETURN(std::vector<StoredObject> found, store_->List(published));
    for (const StoredObject& object : found) {
      if (object.name == published) return Status::Ok();
    }
    return Status(
        StatusCode::kDataLoss,
        fmt::format("staged part {} vanished before it was published", store_->Uri(staged)),
        FailureClass::kDestination);
  }
  BIZON_RETURN_IF_ERROR(copied);
  return store_->Delete(staged);
}

Status ObjectPartStore::Replace(std::string_view id, std::string_view job_id,
                                const std::vector<std::string>& files) {
  for (const std::string& file : files) BIZON_RETURN_IF_ERROR(Publish(id, file));
  BIZON_ASSIGN_OR_RETURN(std::vector<std::string> published, ListPublished(id));
  for (const std::string& file : published) {
    if (std::ranges::find(files, file) == files.end()) {
      BIZON_RETURN_IF_ERROR(DeletePublished(id, file));  // The previous table's.
    }
  }
  return Cleanup(id, job_id);
}

Status ObjectPartStore::Cleanup(std::string_view id, std::string_view job_id) {
  (void)job_id;  // Every staged object of a finished job is a leftover, whoever wrote it.
  BIZON_ASSIGN_OR_RETURN(std::vector<std::string> staged, ListStaged(id));
  for (const std::string& file : staged) BIZON_RETURN_IF_ERROR(DeleteStaged(id, file));
  return Status::Ok();
}

Result<std::optional<std::string>> ObjectPartStore::ReadManifest() {
  auto text =
      store_->Get(fmt::format("{}{}/{}.job.json", prefix_, kStaging, default_destination_id_));
  if (!text && text.error().code() == StatusCode::kNotFound) return std::optional<std::string>();
  if (!text) return Fail(text.error());
  return std::optional<std::string>(std::move(*text));
}

Status ObjectPartStore::WriteManifest(const std::string& text) {
  return store_->Put(fmt::format("{}{}/{}.job.json", prefix_, kStaging, default_destination_id_),
                     text);
}

Status ObjectPartStore::RemoveManifest() {
  return store_->Delete(
      fmt::format("{}{}/{}.job.json", prefix_, kStaging, default_destination_id_));
}

std::string ObjectPartStore::Describe(std::string_view id, std::string_view file) const {
  return store_->Uri(TablePrefix(id) + std::string(file));
}

}  // namespace bizon
