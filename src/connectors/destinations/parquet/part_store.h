// PartStore: where a parts destination keeps its part files. Each destination id has a staging
// area, which readers never see, and a published table (a directory, an object prefix), which is
// what they read; the job's manifest sits beside them. LocalPartStore (the file destination's
// Parquet format) and ObjectPartStore (gcs, s3) implement it; PartsDestination decides what moves
// when.
//
// Every call is idempotent, so that a process resuming after a crash can repeat what the dead one
// was doing: deleting a missing file succeeds, publishing a file that is already published
// succeeds. Failures carry failure class destination.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"

namespace bizon {

class PartStore {
 public:
  virtual ~PartStore() = default;

  /// Refuses an id this store cannot hold (before anything is written for it).
  virtual Status CheckId(std::string_view id) const = 0;
  /// Makes `id`'s staging area usable for job `job_id`. `fresh` (a full refresh's first use of
  /// the id) empties it first: what it holds belongs to an abandoned job.
  virtual Status Prepare(std::string_view id, std::string_view job_id, bool fresh) = 0;
  /// For a resumed job whose manifest already names `id`: makes what Prepare() makes exist when
  /// the job died before Prepare() made it (the manifest is written first), keeping what the
  /// staging area holds. `fresh`: the job is a full refresh. Nothing to do by default.
  virtual Status Reopen(std::string_view id, std::string_view job_id, bool fresh) {
    (void)id;
    (void)job_id;
    (void)fresh;
    return Status::Ok();
  }
  /// A local path the part `file` of `id` is written to before Stage() takes it.
  virtual std::string ScratchPath(std::string_view id, std::string_view file) const = 0;
  /// Moves the file written at ScratchPath() into `id`'s staging area; durable on return.
  virtual Status Stage(std::string_view id, std::string_view file) = 0;

  /// File names (no folder) in `id`'s staging area / published table, in name order.
  virtual Result<std::vector<std::string>> ListStaged(std::string_view id) = 0;
  virtual Result<std::vector<std::string>> ListPublished(std::string_view id) = 0;
  virtual Status DeleteStaged(std::string_view id, std::string_view file) = 0;
  virtual Status DeletePublished(std::string_view id, std::string_view file) = 0;

  /// Moves staged `file` into the published table; succeeds when it is there already.
  virtual Status Publish(std::string_view id, std::string_view file) = 0;
  /// A full refresh's publish: afterwards the published table holds exactly `files` (the parts
  /// job `job_id` staged), and the staging area nothing.
  virtual Status Replace(std::string_view id, std::string_view job_id,
                         const std::vector<std::string>& files) = 0;
  /// After the job succeeded: removes what its staging left behind.
  virtual Status Cleanup(std::string_view id, std::string_view job_id) = 0;

  /// The job manifest: nullopt when there is none.
  virtual Result<std::optional<std::string>> ReadManifest() = 0;
  virtual Status WriteManifest(const std::string& text) = 0;
  virtual Status RemoveManifest() = 0;

  /// Where the published `file` of `id` is (a path, a gs:// or s3:// URI), for messages.
  virtual std::string Describe(std::string_view id, std::string_view file) const = 0;
};

}  // namespace bizon
