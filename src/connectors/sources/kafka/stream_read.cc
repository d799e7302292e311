#include "connectors/sources/kafka/stream_read.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <utility>

namespace bizon::kafka {
namespace {

using Clock = std::chrono::steady_clock;

/// Calls `visit(topic-partition, next offset)` for each position in a stream pagination
/// ({"<topic>": {"<partition>": <next offset>}}); skips what has another shape.
template <typename Visit>
void ForEachPosition(const Value& pagination, Visit visit) {
  if (!pagination.is_map()) return;
  for (const auto& [topic, partitions] : pagination.AsMap()) {
    if (!partitions.is_map()) continue;
    for (const auto& [partition, offset] : partitions.AsMap()) {
      if (!offset.is_integer()) continue;
      visit(std::pair<std::string, int32_t>(
                topic, static_cast<int32_t>(std::strtol(partition.c_str(), nullptr, 10))),
            offset.AsInteger());
    }
  }
}

std::string PartitionName(std::string_view topic, int32_t partition) {
  return fmt::format("{}/{}", topic, partition);
}

}  // namespace

StreamRead::StreamRead(const KafkaSourceOptions& options, KafkaConnection& connection,
                       MessageDecoder& decoder)
    : options_(options), connection_(connection), decoder_(decoder) {}

bool StreamRead::OnRebalance(bool assigned, ErrorCode reason, PartitionList& partitions) {
  if (!assigned) {
    Revoked(reason, partitions);
    return true;
  }
  std::vector<std::optional<int64_t>> claimed;
  if (owner_ != nullptr) {
    // Shared by several members: the ledger says where the partitions stand, and from now on
    // fences the writes of whoever held them before.
    std::vector<std::string> names;
    names.reserve(static_cast<size_t>(partitions.size()));
    for (int i = 0; i < partitions.size(); ++i) {
      names.push_back(PartitionName(partitions.at(i).topic, partitions.at(i).partition));
    }
    auto positions = owner_->Claimed(names);
    if (!positions) {
      // Not assigned: the Read in progress fails and the run ends, leaving the group.
      claim_error_ = positions.error();
      return false;
    }
    claimed = std::move(*positions);
  }
  Assigned(partitions, claimed);
  return true;
}

void StreamRead::Assigned(PartitionList& partitions,
                          const std::vector<std::optional<int64_t>>& claimed) {
  std::string shown;
  for (int i = 0; i < partitions.size(); ++i) {
    TopicPartition partition = partitions.at(i);
    TopicPartitionKey key{std::string(partition.topic), partition.partition};
    if (i < static_cast<int>(claimed.size()) && claimed[static_cast<size_t>(i)]) {
      positions_[key] = *claimed[static_cast<size_t>(i)];
    }
    // The backend's record of progress wins over the group's committed offsets.
    if (auto known = positions_.find(key); known != positions_.end()) {
      partitions.SetOffset(i, known->second);
      partition.offset = known->second;
    }
    assigned_.insert(key);
    at_end_.erase(key);
    shown +=
        fmt::format("{}{}[{}]@{}", shown.empty() ? "" : ", ", partition.topic, partition.partition,
                    partition.offset >= 0 ? std::to_string(partition.offset) : "committed");
  }
  spdlog::info("Kafka partitions assigned: {}", shown);
}

void StreamRead::Revoked(ErrorCode reason, PartitionList& partitions) {
  std::vector<std::string> names;
  for (int i = 0; i < partitions.size(); ++i) {
    TopicPartitionKey key{std::string(partitions.at(i).topic), partitions.at(i).partition};
    assigned_.erase(key);
    at_end_.erase(key);
    if (owner_ != nullptr) {
      // Its next owner starts from the ledger; what this Read read of it is dropped.
      positions_.erase(key);
      revoked_in_get_.insert(key);
      names.push_back(PartitionName(key.first, key.second));
    }
  }
  if (owner_ != nullptr) owner_->Revoked(names);
  spdlog::info("Kafka partitions revoked: {} ({})", partitions.size(), ErrorName(reason));
}

Status StreamRead::Start(const Value& pagination) {
  if (!started_) {
    started_ = true;
    // Resume: the pagination is the cursor of the last durable write.
    ForEachPosition(pagination,
                    [&](const TopicPartitionKey& key, int64_t next) { positions_[key] = next; });
    committed_.clear();
  }
  if (!subscribed_) {
    std::vector<std::string> topics;
    topics.reserve(options_.topics.size());
    for (const TopicRoute& topic : options_.topics) topics.push_back(topic.name);
    if (ErrorCode error = connection_.consumer().Subscribe(topics); error != ErrorCode::kNoError) {
      return UnavailableError(
          fmt::format("cannot subscribe to the Kafka topics: {}", ErrorText(error)));
    }
    subscribed_ = true;
  }
  if (unsent_commit_.has_value()) {
    Value again = *std::exchange(unsent_commit_, std::nullopt);
    BIZON_RETURN_IF_ERROR(Commit(again));
  }
  return Status::Ok();
}

Status StreamRead::Read(const Value& pagination, SourceIteration& iteration) {
  BIZON_RETURN_IF_ERROR(Start(pagination));
  auto deadline = Clock::now() + std::chrono::seconds(options_.consumer_timeout_s);
  int64_t consumed = 0;
  // With a partition owner: the partition of each record in the iteration, so that records of
  // a partition revoked during this Read can be dropped before it returns.
  std::vector<TopicPartitionKey> record_partitions;
  revoked_in_get_.clear();
  while (consumed < options_.batch_size) {
    Message message = connection_.consumer().PollUntil(deadline);
    last_poll_ = Clock::now();
    if (!claim_error_.ok()) {
      return std::exchange(claim_error_, Status::Ok())
          .WithContext("cannot claim the assigned Kafka partitions");
    }
    // Dropped at once: a partition revoked and assigned again within one poll (an eager
    // rebalance) keeps what is read of it from here on, at the position the ledger gave it.
    if (!revoked_in_get_.empty()) DropRevoked(iteration.records, record_partitions);
    if (!message) break;
    BIZON_ASSIGN_OR_RETURN(bool more,
                           ReadOne(std::move(message), iteration, consumed, record_partitions));
    if (!more) break;
  }
  BIZON_RETURN_IF_ERROR(connection_.CheckFatalError());
  if (owner_ != nullptr) {
    for (const auto& [key, next] : positions_) {
      if (assigned_.contains(key)) {
        iteration.partition_positions.emplace_back(PartitionName(key.first, key.second), next);
      }
    }
  }
  iteration.next_pagination = Pagination();
  return Status::Ok();
}

Result<bool> StreamRead::ReadOne(Message message, SourceIteration& iteration, int64_t& consumed,
                                 std::vector<TopicPartitionKey>& record_partitions) {
  if (message.error() == ErrorCode::kPartitionEof) {
    at_end_.insert({std::string(message.topic()), message.partition()});
    // Caught up everywhere: hand over what we have rather than wait for the timeout.
    return !(consumed > 0 && at_end_.size() >= assigned_.size());
  }
  if (message.error() != ErrorCode::kNoError) {
    BIZON_RETURN_IF_ERROR(connection_.HandleMessageError(message));
    return true;
  }
  TopicPartitionKey key{std::string(message.topic()), message.partition()};
  if (owner_ != nullptr && !assigned_.contains(key)) return true;  // Fetched before a revocation.
  BIZON_RETURN_IF_ERROR(decoder_.Append(message, iteration.records));
  if (owner_ != nullptr) record_partitions.resize(iteration.records.size(), key);
  positions_[key] = message.offset() + 1;
  at_end_.erase(key);
  ++consumed;
  return true;
}

Value StreamRead::Pagination() const {
  // Every configured topic is a key, so the pagination is never empty: a stream does not end.
  Value::Map by_topic;
  for (const TopicRoute& topic : options_.topics) {
    by_topic.emplace_back(topic.name, Value::EmptyMap());
  }
  for (const auto& [key, next] : positions_) {
    Value* partitions = nullptr;
    for (auto& [name, value] : by_topic) {
      if (name == key.first) partitions = &value;
    }
    if (partitions == nullptr) {
      by_topic.emplace_back(key.first, Value::EmptyMap());
      partitions = &by_topic.back().second;
    }
    partitions->Set(std::to_string(key.second), Value(next));
  }
  return Value(std::move(by_topic));
}

void StreamRead::DropRevoked(RecordBatch& records,
                             std::vector<TopicPartitionKey>& record_partitions) {
  RecordBatch kept;
  std::vector<TopicPartitionKey> kept_partitions;
  size_t begin = 0;
  for (size_t i = 0; i <= records.size(); ++i) {
    bool drop = i < records.size() && revoked_in_get_.contains(record_partitions[i]);
    if (i == records.size() || drop) {
      if (i > begin) {
        kept.AppendRange(records, begin, i);
        kept_partitions.insert(kept_partitions.end(),
                               record_partitions.begin() + static_cast<std::ptrdiff_t>(begin),
                               record_partitions.begin() + static_cast<std::ptrdiff_t>(i));
      }
      begin = i + 1;
    }
  }
  if (kept.size() < records.size()) {
    spdlog::info(
        "Kafka: {} records of revoked partitions dropped from the batch in hand; the "
        "partitions' next owner reads them",
        records.size() - kept.size());
  }
  records = std::move(kept);
  record_partitions = std::move(kept_partitions);
  revoked_in_get_.clear();
}

bool StreamRead::LostStaticMembership() {
  if (connection_.InstanceId() == KafkaConnection::kNoInstanceId || assigned_.empty()) {
    return false;
  }
  return connection_.consumer().MemberId().empty();
}

Status StreamRead::Recreate(std::string_view why) {
  Status reopened = connection_.Reopen(why);
  subscribed_ = false;
  assigned_.clear();
  at_end_.clear();
  return reopened;
}

Status StreamRead::Commit(const Value& up_to) {
  if (!connection_.is_open() || !options_.commit_offsets) return Status::Ok();
  if (LostStaticMembership()) {
    // librdkafka dropped its member id after max.poll.interval.ms (a batch slower than that).
    // A commit now would carry our group.instance.id without the member id the broker knows,
    // and be fenced, fatally, as if another process had taken the id. A new consumer rejoins
    // under the same id at once and starts from our positions.
    unsent_commit_ = up_to;
    return Recreate(
        "Kafka commit skipped (max.poll.interval.ms exceeded, the static member's id was reset)");
  }
  unsent_commit_.reset();
  if (assigned_.empty()) {
    // Not joined yet, or rejoining after Recreate: nothing could be sent now.
    unsent_commit_ = up_to;
    return Status::Ok();
  }
  return SendCommit(up_to);
}

Status StreamRead::SendCommit(const Value& up_to) {
  // What the recorded cursor covers, which may be behind positions_ (what was fetched).
  PartitionList offsets(static_cast<int>(positions_.size()));
  std::map<TopicPartitionKey, int64_t> sending;
  ForEachPosition(up_to, [&](const TopicPartitionKey& key, int64_t next) {
    if (!assigned_.contains(key)) return;  // Another member owns it now.
    auto previous = committed_.find(key);
    if (previous != committed_.end() && previous->second == next) return;
    offsets.Add(key.first, key.second, next);
    sending[key] = next;
  });
  if (offsets.empty()) return Status::Ok();
  ErrorCode error = connection_.consumer().Commit(offsets);
  if (error == ErrorCode::kNoError) {
    for (const auto& [key, next] : sending) committed_[key] = next;
    return Status::Ok();
  }
  unsent_commit_ = up_to;
  if (error == ErrorCode::kIllegalGeneration || error == ErrorCode::kUnknownMemberId) {
    // The group moved on without us: rejoin with a new consumer. The next assignment starts
    // from our positions, which the backend already holds.
    return Recreate(fmt::format("Kafka commit failed ({})", ErrorName(error)));
  }
  if (error == ErrorCode::kFencedInstanceId &&
      Clock::now() - last_poll_ >= connection_.MaxPollInterval()) {
    // The same self-fence, when librdkafka reset the member id after the check above.
    return Recreate(fmt::format("Kafka commit failed ({})", ErrorName(error)));
  }
  // Not a run failure: the backend cursor is already stored and is what a resume reads. The
  // group's offsets lag behind until this cursor is sent again at the next Read (or a later one
  // supersedes it): the last batch of a quiet topic must not leave them behind for good.
  spdlog::warn("Kafka commit failed ({}); it is sent again at the next poll", ErrorText(error));
  return Status::Ok();
}

}  // namespace bizon::kafka
