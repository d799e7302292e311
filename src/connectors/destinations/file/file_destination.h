// The file destination: NDJSON files, one JSON object per line.
//
// Paths: `<destination_id>.json` is what readers see. A full refresh stages into `_temp.json` and
// renames it over the main file at Finalize(); an incremental run stages into
// `_incremental.json` and appends it to the main file at Finalize(); a stream run appends to the
// main file directly.
//
// Exactly-once: every Write() fsyncs and returns the byte length of each file it touched; the
// engine records that with the destination cursor in the same backend commit that advances the
// cursor. On resume, Open() truncates each file back to the recorded length, discarding rows
// written after the last commit, which the producer is about to fetch again. The append at
// Finalize() is journalled (main length before the append) so that a crash half-way is redone,
// not doubled.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bizon/registry.h"

namespace bizon {

class FileDestination final : public Destination {
 public:
  explicit FileDestination(const DestinationContext& context);

  Status Open(const Value& resume_state) override;
  Result<Value> Write(const RecordBatch& records, int64_t loaded_at_us) override;
  Status Finalize() override;
  Status OnJobSucceeded() override;

 private:
  struct Column {
    std::string name;
  };

  std::string MainPath(std::string_view destination_id) const;
  std::string StagingPath(std::string_view destination_id) const;
  std::string JournalPath(std::string_view destination_id) const;
  Status AppendUnnested(std::string& out, std::string_view destination_id,
                        std::string_view payload, std::string_view record_id);
  Value CurrentState() const;

  SyncMetadata sync_;
  std::string default_destination_id_;
  bool unnest_;
  std::map<std::string, std::vector<Column>, std::less<>> schemas_;
  /// Byte length of every staging file this job wrote, by destination id.
  std::map<std::string, int64_t, std::less<>> lengths_;
};

}  // namespace bizon
