// The file destination: NDJSON files, one JSON object per line.
//
// Paths: `<destination_id>.json` is what readers see. A full refresh stages into `_temp.json` and
// renames it over the main file at Finalize(); an incremental run stages into
// `_incremental.json` and appends it to the main file at Finalize(); a stream run appends to the
// main file directly.
//
// Rows stream to disk: Append() renders each batch into a small buffer per file and writes it
// out as it fills (the engine holds no buffer_size of records for this destination), and Sync()
// (or Write(), which is Append() then Sync()) fsyncs.
//
// Exactly-once: every Sync() fsyncs and returns the byte length of each file it touched; the
// engine records that with the destination cursor in the same backend commit that advances the
// cursor. A failed Append() cuts its files back to their length at the last Sync(). On resume,
// Open() truncates each file back to the recorded length, discarding rows written after the last
// commit, which the producer is about to fetch again. The append at Finalize() is journalled (main
// length before the append) so that a crash half-way is redone, not doubled.
//
// A cursor only knows the files written up to it, so each job also keeps a manifest,
// `<main file>.bizon-job`, naming every file the job has touched and its length when the job
// first touched it (0 for staging files, which a job empties first; the existing length for a
// stream's main file). It is written durably before the file's first write, so a resume also cuts
// back files first touched after the last commit (or before any commit), and it records that a
// full refresh has started publishing, so a resume after the rename does not look for the
// staging file it already moved.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bizon/registry.h"
#include "connectors/destinations/destination_record.h"

namespace bizon {

/// Refuses a destination id whose files would not stay inside the working directory, where the
/// file destination writes: an absolute path, a `..` segment, NUL or another control character.
/// A relative subfolder (`a/b` writes `a/b.json`) is allowed; the folder must already exist.
/// kInvalidArgument, failure class destination; the message names the quoted id.
Status CheckFileDestinationId(std::string_view destination_id);

class FileDestination final : public Destination {
 public:
  explicit FileDestination(const DestinationContext& context);
  ~FileDestination() override;
  FileDestination(const FileDestination&) = delete;
  FileDestination& operator=(const FileDestination&) = delete;

  Status Open(const Value& resume_state) override;
  Result<Value> Write(const RecordBatch& records, int64_t loaded_at_us) override;
  bool CanAppend() const override { return true; }
  Status Append(const RecordBatch& records, int64_t loaded_at_us) override;
  Result<Value> Sync() override;
  Status Finalize() override;
  Status OnJobSucceeded() override;

  /// `destination_id`, else `<source>_<stream>`: where records without an id of their own go.
  const std::string& default_destination_id() const { return default_destination_id_; }

 private:
  struct Column {
    std::string name;
  };
  /// A file this job writes: its open descriptor and the rendered lines not yet written.
  struct Output {
    std::string destination_id;
    int fd = -1;
    std::string pending;
    /// Bytes written since the last fsync.
    bool unsynced = false;
  };
  /// Bytes rendered per file before they are written out.
  static constexpr size_t kChunkBytes = 1 << 20;

  /// The output of `destination_id`, opening its staging file on first use.
  Result<Output*> OutputFor(std::string_view destination_id);
  /// Checks and tracks the ids of `records` this job has not written yet, all of them before
  /// anything of the batch reaches a file.
  Status TrackNewIds(const RecordBatch& records);
  Status WriteOut(Output& output);
  Status AppendRecords(const RecordBatch& records, int64_t loaded_at_us);
  /// After a failed Append(): every file back to its length at the last Sync().
  void CutBackToSynced();
  void CloseOutputs();

  std::string MainPath(std::string_view destination_id) const;
  std::string StagingPath(std::string_view destination_id) const;
  std::string JournalPath(std::string_view destination_id) const;
  std::string ManifestPath() const;
  Status SaveManifest() const;
  /// Adds `destination_id` to the job's manifest before its first write, and empties its staging
  /// file (whatever is there belongs to an abandoned job).
  Status Track(const std::string& destination_id);
  /// Refuses `destination_id` (the first time this job writes it) when CheckFileDestinationId
  /// does, or when its files and those of an id already written would be the same files (`x`
  /// stages into `x_temp.json`, the main file of `x_temp`).
  Status CheckNewDestinationId(std::string_view destination_id) const;
  Status AppendUnnested(std::string& out, std::string_view destination_id, std::string_view payload,
                        std::string_view record_id);
  Value CurrentState() const;

  /// Undoes the append of an earlier job that stopped part-way through its Finalize() and was
  /// then abandoned: its records are read again by this job.
  Status UndoAbandonedAppend(const std::string& destination_id);

  SyncMetadata sync_;
  std::function<Result<bool>(const std::string& job_id)> job_abandoned_;
  std::string default_destination_id_;
  bool unnest_;
  std::map<std::string, std::vector<Column>, std::less<>> schemas_;
  /// Byte length of every staging file this job wrote, by destination id.
  std::map<std::string, int64_t, std::less<>> lengths_;
  /// The manifest: each file's length when this job first touched it, and whether a full
  /// refresh's Finalize() has started renaming.
  std::map<std::string, int64_t, std::less<>> starts_;
  bool published_ = false;
  /// `lengths_` at the last Sync() (or when the file was first tracked).
  std::map<std::string, int64_t, std::less<>> synced_lengths_;
  /// Open files, in order of first write; their buffers are reused from one batch to the next.
  std::vector<Output> outputs_;
  DestinationRecordWriter writer_;
};

}  // namespace bizon
