// ObjectPartStore: the gcs and s3 destinations' Parquet parts in a bucket (a PartStore over an
// ObjectStore).
//
// | what             | object name                                               |
// |------------------|-----------------------------------------------------------|
// | published table  | `<prefix>/<destination_id>/<job_id>-<seq>.parquet`        |
// | staging area     | `<prefix>/_bizon_staging/<destination_id>/<file>`         |
// | job manifest     | `<prefix>/_bizon_staging/<default destination_id>.job.json` |
//
// Readers of `<prefix>/<destination_id>/` never see staged parts (engines that scan a whole
// prefix skip names starting with `_`). A part is written to a local scratch directory, uploaded
// to its staging name, and published by a server-side copy to its final name followed by a
// delete of the staged one. A full refresh's Replace() publishes the job's parts, then deletes
// every other object of the table: an object store has no atomic rename, so a reader listing the
// table during that window may see old and new parts together.
#pragma once

#include <memory>
#include <string>

#include "connectors/destinations/object_store/object_store.h"
#include "connectors/destinations/parquet/part_store.h"

namespace bizon {

/// Refuses a destination id that would not make a clean object name: empty, control characters,
/// a leading or doubled '/', a '.' or '..' segment, or one starting with `_bizon_staging`.
Status CheckObjectDestinationId(std::string_view id);

/// `prefix` without leading and trailing slashes.
std::string NormalizeObjectPrefix(std::string_view prefix);

class ObjectPartStore final : public PartStore {
 public:
  /// Parts are written under a scratch directory in the system's temporary directory, one per
  /// working directory, `pipeline`, prefix and default id: emptied here (a killed run's
  /// leftovers) and removed with the store.
  static Result<std::unique_ptr<ObjectPartStore>> Make(std::unique_ptr<ObjectStore> store,
                                                       std::string prefix,
                                                       std::string default_destination_id,
                                                       std::string_view pipeline);
  ~ObjectPartStore() override;

  Status CheckId(std::string_view id) const override;
  Status Prepare(std::string_view id, std::string_view job_id, bool fresh) override;
  std::string ScratchPath(std::string_view id, std::string_view file) const override;
  Status Stage(std::string_view id, std::string_view file) override;
  Result<std::vector<std::string>> ListStaged(std::string_view id) override;
  Result<std::vector<std::string>> ListPublished(std::string_view id) override;
  Status DeleteStaged(std::string_view id, std::string_view file) override;
  Status DeletePublished(std::string_view id, std::string_view file) override;
  Status Publish(std::string_view id, std::string_view file) override;
  Status Replace(std::string_view id, std::string_view job_id,
                 const std::vector<std::string>& files) override;
  Status Cleanup(std::string_view id, std::string_view job_id) override;
  Result<std::optional<std::string>> ReadManifest() override;
  Status WriteManifest(const std::string& text) override;
  Status RemoveManifest() override;
  std::string Describe(std::string_view id, std::string_view file) const override;

 private:
  ObjectPartStore(std::unique_ptr<ObjectStore> store, std::string prefix,
                  std::string default_destination_id, std::string scratch_dir);
  std::string TablePrefix(std::string_view id) const;
  std::string StagingPrefix(std::string_view id) const;
  /// The file names directly under `prefix` (deeper names belong to other ids).
  Result<std::vector<std::string>> ListUnder(const std::string& prefix);

  std::unique_ptr<ObjectStore> store_;
  /// "" or "a/b/".
  std::string prefix_;
  std::string default_destination_id_;
  std::string scratch_dir_;
};

}  // namespace bizon
