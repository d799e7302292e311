// LocalPartStore: the file destination's Parquet parts on local disk, relative to the working
// directory (where the NDJSON files go too).
//
// | what                | path                                                  |
// |---------------------|-------------------------------------------------------|
// | published table     | `<destination_id>/` (created; its parent must exist)  |
// | staging area        | `<destination_id>.bizon-staging/`                     |
// | a part being written| `<destination_id>.bizon-staging/.<file>.tmp`          |
// | job manifest        | `<default destination_id>.bizon-parts-job`            |
//
// Every move is a rename(2) inside one parent directory, followed by an fsync of the directories
// it touched. A full refresh's Replace() swaps the staging directory with the table in one
// renameat2(RENAME_EXCHANGE) (readers see the old table or the new one, never a mix), or, on a
// file system without it, with two renames through `<destination_id>.bizon-old/`. The staging
// directory of a full refresh holds a marker `.bizon-job-<job_id>`, which the swap carries into
// the table: a Replace() repeated after a crash sees it and does not swap back.
#pragma once

#include <string>

#include "connectors/destinations/parquet/part_store.h"

namespace bizon {

class LocalPartStore final : public PartStore {
 public:
  explicit LocalPartStore(std::string default_destination_id)
      : default_destination_id_(std::move(default_destination_id)) {}

  Status CheckId(std::string_view id) const override;
  Status Prepare(std::string_view id, std::string_view job_id, bool fresh) override;
  Status Reopen(std::string_view id, std::string_view job_id, bool fresh) override;
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
  static std::string TableDir(std::string_view id) { return std::string(id); }
  static std::string StagingDir(std::string_view id) { return std::string(id) + ".bizon-staging"; }
  std::string ManifestPath() const { return default_destination_id_ + ".bizon-parts-job"; }
  /// Swaps the staging directory in as the table.
  Status SwapIn(std::string_view id);

  std::string default_destination_id_;
};

}  // namespace bizon
