// Members: several processes of one partitioned stream pipeline (a kafka source in stream mode
// under the stream runner), each holding the partitions its consumer group assigns it.
//
// Each member runs its own job, under its member key, so that resuming it rolls back only its
// own writes. The partitions' positions live in the backend's partition ledger, shared by the
// members: a member claims a partition when the group assigns it (a new epoch, which fences the
// previous owner), reads it from the ledger's position, and records each durable write's cursor
// and the partitions' new positions in one transaction, refused if another member claimed one of
// them since. A member that claims a partition from a member that is gone (its run lock is free)
// first discards what that member wrote after its last recorded cursor.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/backend.h"
#include "bizon/source.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "engine/settings.h"

namespace bizon {

/// The job key of member `member` of the pipeline stream `pipeline`.
StreamKey MemberKey(const StreamKey& pipeline, std::string_view member);

/// One member's side of the partition ledger, handed to the source as its PartitionOwner.
class MemberLedger final : public PartitionOwner {
 public:
  /// Discards what job `job_id` wrote after `destination_state` (a destination opened for that
  /// job with that state, as a resume does).
  using RollBack = std::function<Status(const std::string& job_id, const Value& destination_state)>;

  MemberLedger(Backend& backend, const PipelineSettings& settings, std::string member,
               RollBack roll_back)
      : backend_(backend),
        settings_(settings),
        member_(std::move(member)),
        roll_back_(std::move(roll_back)) {}

  Result<std::vector<std::optional<int64_t>>> Claimed(
      const std::vector<std::string>& partitions) override;
  void Revoked(const std::vector<std::string>& partitions) override;

  /// Records `cursor` (of this member's job) and the partitions' new positions after
  /// `iteration`, each under the epoch this member claimed it with, in one transaction. Fails
  /// with kAborted, recording nothing, when another member claimed one of them since.
  Status Record(const DestinationCursor& cursor, const SourceIteration& iteration);

  /// Discards what this member's job wrote after `destination_state`.
  Status RollBackOwn(const std::string& job_id, const Value& destination_state) const {
    return roll_back_(job_id, destination_state);
  }

  const std::string& member() const { return member_; }

 private:
  /// Rolls back the writes of `owner`'s job after its last cursor when `owner` is gone.
  Status AdoptIfGone(const std::string& owner);

  Backend& backend_;
  const PipelineSettings& settings_;
  std::string member_;
  RollBack roll_back_;
  std::map<std::string, int64_t> epochs_;  // Partition -> the epoch of this member's claim.
};

}  // namespace bizon
