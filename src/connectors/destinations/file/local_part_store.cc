#include "connectors/destinations/file/local_part_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "connectors/destinations/file/file_destination.h"

namespace bizon {
namespace {

namespace fs = std::filesystem;

Status IoError(std::string_view what, std::string_view path, int error = errno) {
  return Status(StatusCode::kUnavailable,
                fmt::format("{} {}: {}", what, path, std::strerror(error)),
                FailureClass::kDestination);
}

Status FsError(std::string_view what, std::string_view path, const std::error_code& error) {
  return Status(StatusCode::kUnavailable, fmt::format("{} {}: {}", what, path, error.message()),
                FailureClass::kDestination);
}

/// fsyncs a file or a directory (so that the entries created, renamed or removed in it survive a
/// crash).
Status SyncPath(const std::string& path, int flags) {
  int fd = ::open(path.empty() ? "." : path.c_str(), O_RDONLY | O_CLOEXEC | flags);
  if (fd < 0) return IoError("cannot open", path);
  int synced = ::fsync(fd);
  int error = errno;
  ::close(fd);
  return synced == 0 ? Status::Ok() : IoError("cannot fsync", path, error);
}

Status SyncDirectory(const std::string& dir) { return SyncPath(dir, O_DIRECTORY); }

std::string ParentOf(const std::string& path) { return fs::path(path).parent_path().string(); }

/// Part files in `dir` (names ending .parquet, hidden ones left out), in name order; none when
/// the directory does not exist.
Result<std::vector<std::string>> ListParts(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code error;
  fs::directory_iterator it(dir, error);
  if (error == std::errc::no_such_file_or_directory) return files;
  if (error) return Fail(FsError("cannot list", dir, error));
  for (const fs::directory_entry& entry : it) {
    std::string name = entry.path().filename().string();
    if (name.starts_with('.') || !name.ends_with(".parquet")) continue;
    files.push_back(std::move(name));
  }
  std::ranges::sort(files);
  return files;
}

Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0) {
    return errno == ENOENT ? Status::Ok() : IoError("cannot remove", path);
  }
  return SyncDirectory(ParentOf(path));
}

Status RemoveTree(const std::string& path) {
  std::error_code error;
  fs::remove_all(path, error);
  if (error) return FsError("cannot remove", path, error);
  return Status::Ok();
}

Status MakeDirectory(const std::string& path) {
  std::error_code error;
  if (fs::create_directory(path, error)) return SyncDirectory(ParentOf(path));
  if (error) return FsError("cannot create directory", path, error);
  return Status::Ok();  // It was there.
}

Status WriteDurably(const std::string& path, std::string_view data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("cannot create", path);
  while (!data.empty()) {
    ssize_t written = ::write(fd, data.data(), data.size());
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) {
      Status failed = IoError("cannot write", path);
      ::close(fd);
      return failed;
    }
    data.remove_prefix(static_cast<size_t>(written));
  }
  int synced = ::fsync(fd);
  int error = errno;
  ::close(fd);
  return synced == 0 ? Status::Ok() : IoError("cannot fsync", path, error);
}

std::string JobMarker(std::string_view job_id) { return fmt::format(".bizon-job-{}", job_id); }

}  // namespace

Status LocalPartStore::CheckId(std::string_view id) const {
  BIZON_RETURN_IF_ERROR(CheckFileDestinationId(id));
  if (id.ends_with(".bizon-staging") || id.ends_with(".bizon-old")) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("a destination id must not end like the file destination's own "
                              "directories (.bizon-staging, .bizon-old): {}",
                              QuoteDestinationId(id)),
                  FailureClass::kDestination);
  }
  return Status::Ok();
}

Status LocalPartStore::Prepare(std::string_view id, std::string_view job_id, bool fresh) {
  std::string staging = StagingDir(id);
  if (!fresh) {
    BIZON_RETURN_IF_ERROR(MakeDirectory(TableDir(id)));
    return MakeDirectory(staging);
  }
  // A full refresh stages the whole table; the marker travels with it when it is swapped in.
  BIZON_RETURN_IF_ERROR(RemoveTree(staging));
  BIZON_RETURN_IF_ERROR(MakeDirectory(staging));
  BIZON_RETURN_IF_ERROR(WriteDurably(fmt::format("{}/{}", staging, JobMarker(job_id)), ""));
  return SyncDirectory(staging);
}

Status LocalPartStore::Reopen(std::string_view id, std::string_view job_id, bool fresh) {
  if (!fresh) return Prepare(id, job_id, /*fresh=*/false);
  std::string marker = JobMarker(job_id);
  // Swapped in already: the staging directory is gone on purpose.
  if (fs::exists(fmt::format("{}/{}", TableDir(id), marker))) return Status::Ok();
  std::string staging = StagingDir(id);
  BIZON_RETURN_IF_ERROR(MakeDirectory(staging));
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(staging, error)) {
    std::string name = entry.path().filename().string();
    // Markers of an abandoned job whose staging this one had not emptied yet.
    if (name.starts_with(".bizon-job-") && name != marker) {
      BIZON_RETURN_IF_ERROR(RemoveFile(entry.path().string()));
    }
  }
  if (error) return FsError("cannot list", staging, error);
  std::string own = fmt::format("{}/{}", staging, marker);
  if (fs::exists(own)) return Status::Ok();
  BIZON_RETURN_IF_ERROR(WriteDurably(own, ""));
  return SyncDirectory(staging);
}

std::string LocalPartStore::ScratchPath(std::string_view id, std::string_view file) const {
  return fmt::format("{}/.{}.tmp", StagingDir(id), file);
}

Status LocalPartStore::Stage(std::string_view id, std::string_view file) {
  std::string scratch = ScratchPath(id, file);
  std::string staged = fmt::format("{}/{}", StagingDir(id), file);
  BIZON_RETURN_IF_ERROR(SyncPath(scratch, 0));
  if (::rename(scratch.c_str(), staged.c_str()) != 0) return IoError("cannot rename", scratch);
  return SyncDirectory(StagingDir(id));
}

Result<std::vector<std::string>> LocalPartStore::ListStaged(std::string_view id) {
  return ListParts(StagingDir(id));
}

Result<std::vector<std::string>> LocalPartStore::ListPublished(std::string_view id) {
  return ListParts(TableDir(id));
}

Status LocalPartStore::DeleteStaged(std::string_view id, std::string_view file) {
  return RemoveFile(fmt::format("{}/{}", StagingDir(id), file));
}

Status LocalPartStore::DeletePublished(std::string_view id, std::string_view file) {
  return RemoveFile(fmt::format("{}/{}", TableDir(id), file));
}

Status LocalPartStore::Publish(std::string_view id, std::string_view file) {
  std::string staged = fmt::format("{}/{}", StagingDir(id), file);
  std::string published = fmt::format("{}/{}", TableDir(id), file);
  if (::rename(staged.c_str(), published.c_str()) != 0) {
    if (errno == ENOENT && fs::exists(published)) return Status::Ok();  // Moved already.
    return IoError("cannot publish", staged);
  }
  BIZON_RETURN_IF_ERROR(SyncDirectory(TableDir(id)));
  return SyncDirectory(StagingDir(id));
}

Status LocalPartStore::SwapIn(std::string_view id) {
  std::string table = TableDir(id);
  std::string staging = StagingDir(id);
  std::string old = table + ".bizon-old";
  if (!fs::exists(staging)) {
    return Status(StatusCode::kDataLoss,
                  fmt::format("staging directory {} vanished before it was published", staging),
                  FailureClass::kDestination);
  }
  if (!fs::exists(table)) {
    if (::rename(staging.c_str(), table.c_str()) != 0) return IoError("cannot rename", staging);
  } else if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, table.c_str(), RENAME_EXCHANGE) !=
             0) {
    if (errno != EINVAL && errno != ENOSYS) return IoError("cannot swap in", staging);
    // No atomic exchange here: the old table steps aside first. A crash in between leaves no
    // table and the marker still in staging, so the next attempt renames staging in.
    BIZON_RETURN_IF_ERROR(RemoveTree(old));
    if (::rename(table.c_str(), old.c_str()) != 0) return IoError("cannot rename", table);
    if (::rename(staging.c_str(), table.c_str()) != 0) return IoError("cannot rename", staging);
  }
  return SyncDirectory(ParentOf(table));
}

Status LocalPartStore::Replace(std::string_view id, std::string_view job_id,
                               const std::vector<std::string>& files) {
  std::string table = TableDir(id);
  if (!fs::exists(fmt::format("{}/{}", table, JobMarker(job_id)))) {
    BIZON_RETURN_IF_ERROR(SwapIn(id));
  }
  // The table is this job's staging directory now: it holds its parts, and only them.
  for (const std::string& file : files) {
    if (!fs::exists(fmt::format("{}/{}", table, file))) BIZON_RETURN_IF_ERROR(Publish(id, file));
  }
  // What is left in staging (the previous table, after an exchange) goes.
  BIZON_RETURN_IF_ERROR(RemoveTree(StagingDir(id)));
  BIZON_RETURN_IF_ERROR(RemoveTree(table + ".bizon-old"));
  return SyncDirectory(ParentOf(table));
}

Status LocalPartStore::Cleanup(std::string_view id, std::string_view job_id) {
  BIZON_RETURN_IF_ERROR(RemoveTree(StagingDir(id)));
  return RemoveFile(fmt::format("{}/{}", TableDir(id), JobMarker(job_id)));
}

Result<std::optional<std::string>> LocalPartStore::ReadManifest() {
  std::ifstream in(ManifestPath(), std::ios::binary);
  if (!in) return std::optional<std::string>();
  return std::optional<std::string>(
      std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
}

Status LocalPartStore::WriteManifest(const std::string& text) {
  std::string path = ManifestPath();
  std::string temp = path + ".tmp";
  BIZON_RETURN_IF_ERROR(WriteDurably(temp, text));
  if (::rename(temp.c_str(), path.c_str()) != 0) return IoError("cannot rename", temp);
  return SyncDirectory(ParentOf(path));
}

Status LocalPartStore::RemoveManifest() { return RemoveFile(ManifestPath()); }

std::string LocalPartStore::Describe(std::string_view id, std::string_view file) const {
  return fmt::format("{}/{}", TableDir(id), file);
}

}  // namespace bizon
