#include "engine/members.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>
#include <utility>

#include "engine/backend/backend_factory.h"

namespace bizon {

StreamKey MemberKey(const StreamKey& pipeline, std::string_view member) {
  return {.name = pipeline.name,
          .source_name = pipeline.source_name,
          .stream_name = fmt::format("{}@{}", pipeline.stream_name, member)};
}

Result<std::vector<std::optional<int64_t>>> MemberLedger::Claimed(
    const std::vector<std::string>& partitions) {
  BIZON_ASSIGN_OR_RETURN(std::vector<PartitionClaim> claims,
                         backend_.ClaimPartitions(settings_.key, member_, partitions));
  std::set<std::string> previous_owners;
  std::vector<std::optional<int64_t>> positions;
  std::string shown;
  for (const PartitionClaim& claim : claims) {
    epochs_[claim.partition] = claim.epoch;
    positions.push_back(claim.position);
    if (!claim.previous_owner.empty() && claim.previous_owner != member_) {
      previous_owners.insert(claim.previous_owner);
    }
    shown +=
        fmt::format("{}{}@{} (epoch {}{})", shown.empty() ? "" : ", ", claim.partition,
                    claim.position ? std::to_string(*claim.position) : "unrecorded", claim.epoch,
                    claim.previous_owner.empty() || claim.previous_owner == member_
                        ? ""
                        : ", from " + claim.previous_owner);
  }
  spdlog::info("Member {} claimed {}", member_, shown);
  // Before reading: what a member that died wrote past its last cursor would be read again.
  for (const std::string& owner : previous_owners) BIZON_RETURN_IF_ERROR(AdoptIfGone(owner));
  return positions;
}

void MemberLedger::Revoked(const std::vector<std::string>& partitions) {
  for (const std::string& partition : partitions) epochs_.erase(partition);
}

Status MemberLedger::Record(const DestinationCursor& cursor, const SourceIteration& iteration) {
  std::vector<PartitionAdvance> advances;
  for (const auto& [partition, position] : iteration.partition_positions) {
    if (auto held = epochs_.find(partition); held != epochs_.end()) {
      advances.push_back({.partition = partition, .position = position, .epoch = held->second});
    }
  }
  return backend_.CreateDestinationCursorAndAdvance(cursor, settings_.key, member_, advances);
}

Status MemberLedger::AdoptIfGone(const std::string& owner) {
  StreamKey key = MemberKey(settings_.key, owner);
  // A connection of its own: a server-side run lock lasts as long as the backend instance.
  BIZON_ASSIGN_OR_RETURN(std::unique_ptr<Backend> probe, OpenBackend(settings_.backend_config));
  if (Status locked = probe->AcquireRunLock(key); !locked.ok()) {
    if (locked.code() != StatusCode::kFailedPrecondition) return locked;
    // Alive: it gave the partitions up at the rebalance after writing what it held of them, or
    // it will find itself fenced at its next write and roll that back.
    spdlog::info("Member {} is alive; it wrote what it held of the partitions before leaving them",
                 owner);
    return Status::Ok();
  }
  BIZON_ASSIGN_OR_RETURN(std::optional<StreamJob> job, probe->GetRunningStreamJob(key));
  if (!job) return Status::Ok();
  BIZON_ASSIGN_OR_RETURN(std::optional<DestinationCursor> cursor,
                         probe->GetLastDestinationCursor(job->id));
  Value state;
  if (cursor && cursor->destination_state) {
    BIZON_ASSIGN_OR_RETURN(state, Value::FromJson(*cursor->destination_state));
  }
  spdlog::info("Member {} is gone: discarding what its job {} wrote after its last cursor", owner,
               job->id);
  return roll_back_(job->id, state);
}

}  // namespace bizon
