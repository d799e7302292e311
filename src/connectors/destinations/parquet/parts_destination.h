// PartsDestination: a table as a set of Parquet part files, published exactly once, over a
// PartStore (local directories for the file destination's `format: parquet`, a bucket for the
// gcs and s3 destinations).
//
// Rows go into one PartWriter (Parquet, or JSON lines) per destination id as batches arrive
// (CanAppend()); a table's rows are written out as a part, `<job_id>-<seq>.parquet` (seq counts the
// job's parts of that id from 1), into the id's staging area whenever they reach max_part_bytes and
// at each Sync(), which returns the number of parts of each id as the state recorded with the
// cursor. A part is published (moved to the table readers see) only once a recorded cursor covers
// it:
//
// - stream: at OnCursorRecorded(state), parts up to the recorded count;
// - incremental: at Finalize(), every part of the job;
// - full refresh: at Finalize(), the table is replaced by the job's parts (PartStore::Replace).
//
// Open(resume_state) of a resumed job deletes the job's staged and published parts past the
// recorded counts (their rows are fetched again), publishes a stream's recorded parts that a
// crash left staged, and removes staged parts of other, abandoned jobs. Part names are
// deterministic, so every step can be repeated after a crash. A job manifest (its id, the ids it
// touched, whether its Finalize() started) lets a resume find ids first written after the last
// cursor, and lets a new job remove the parts an abandoned incremental job had begun to publish.
//
// Lifecycle: the engine's consumer thread only.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bizon/config_spec.h"
#include "bizon/destination.h"
#include "connectors/destinations/parquet/parquet_part_writer.h"
#include "connectors/destinations/parquet/part_store.h"
#include "connectors/destinations/parquet/part_writer.h"

namespace bizon {

/// What the part files hold.
enum class PartFormat { kParquet, kNdjson };

struct PartsDestinationOptions {
  SyncMetadata sync;
  /// See DestinationContext::job_abandoned.
  std::function<Result<bool>(const std::string& job_id)> job_abandoned;
  /// Where records without an id of their own go.
  std::string default_destination_id;
  bool unnest = false;
  /// Unnest columns by destination id.
  std::map<std::string, std::vector<ParquetColumn>, std::less<>> schemas;
  PartFormat format = PartFormat::kParquet;
  /// Parquet only.
  ParquetCompression compression = ParquetCompression::kZstd;
  /// A table's rows are written out as a part once they hold this many bytes of records, besides
  /// at each durable point: what bounds memory (a part is held in DuckDB until it is written).
  int64_t max_part_bytes = 8 << 20;
  /// "file destination", "gcs destination": how log lines name it.
  std::string label;
};

/// Reads the options a parts destination's block holds into `out`: compression and part_size
/// against the destination's declaration `options` (which declares them with
/// ParquetCompressionField and ParquetPartSizeField), unnest and the record_schemas columns. The
/// first misuse of `options` is the error.
Status ReadPartsOptions(OptionReader& options, const Value& config, PartsDestinationOptions& out);

/// `<job_id>-<seq><extension>`, seq zero-padded to six digits.
std::string PartFileName(std::string_view job_id, int64_t seq,
                         std::string_view extension = ".parquet");

/// The job and sequence number of a part file name (`.parquet` or `.json`); nullopt for another
/// name.
std::optional<std::pair<std::string, int64_t>> ParsePartFileName(std::string_view file);

class PartsDestination final : public Destination {
 public:
  PartsDestination(PartsDestinationOptions options, std::unique_ptr<PartStore> store);
  ~PartsDestination() override;

  Status Open(const Value& resume_state) override;
  Result<Value> Write(const RecordBatch& records, int64_t loaded_at_us) override;
  bool CanAppend() const override { return true; }
  Status Append(const RecordBatch& records, int64_t loaded_at_us) override;
  Result<Value> Sync() override;
  Status OnCursorRecorded(const Value& state) override;
  Status Finalize() override;
  Status OnJobSucceeded() override;

 private:
  struct Table {
    std::unique_ptr<PartWriter> writer;
    /// Parts of this job staged so far (seq of the last one).
    int64_t parts = 0;
    /// `parts` at the last Sync(): a failed append deletes the parts staged after it.
    int64_t synced_parts = 0;
    /// Stream: parts published so far.
    int64_t published = 0;
  };
  struct Manifest {
    std::string job_id;
    std::vector<std::string> ids;
    bool published = false;
  };

  Result<std::optional<Manifest>> LoadManifest();
  Status SaveManifest();
  Status Resume(const std::optional<Manifest>& manifest, const Value* committed);
  /// Deletes the job's parts of `id` past `parts`, other jobs' staged parts, and publishes a
  /// stream's staged parts up to `parts`.
  Status RollBack(const std::string& id, int64_t parts);
  /// A new job found the manifest of `previous`: removes what that job left staged, and the
  /// parts it published when it was an incremental job abandoned during its Finalize().
  Status ForgetJob(const Manifest& previous);
  /// Adds `id` to the job (manifest first, then its staging area).
  Status Track(const std::string& id);
  Status TrackNewIds(const RecordBatch& records);
  Result<Table*> WriterFor(std::string_view id);
  /// A writer of options_.format, for the unnest `columns` (nullopt: the destination record).
  Result<std::unique_ptr<PartWriter>> MakeWriter(
      std::optional<std::vector<ParquetColumn>> columns) const;
  Status AppendRecords(const RecordBatch& records, int64_t loaded_at_us);
  /// Writes the table's gathered rows as its next part and stages it.
  Status StagePart(const std::string& id, Table& table);
  /// After a failed write: drops the rows not yet in a part and the parts staged since the last
  /// Sync(), so that what is staged is what the last state said.
  void DiscardUnsynced();
  Value CurrentState() const;
  /// The name of this job's part `seq`.
  std::string FileName(int64_t seq) const;

  PartsDestinationOptions options_;
  std::unique_ptr<PartStore> store_;
  std::map<std::string, Table, std::less<>> tables_;
  bool published_ = false;
};

}  // namespace bizon
