// StreamRead: sync_mode stream. Subscribes to every configured topic once (consumer group
// `group_id`) and returns up to batch_size messages per Read(). Its pagination is the next offset
// of every partition read so far, {"<topic>": {"<partition>": next_offset}}: the stream runner
// stores it in the destination cursor after the durable write, so the backend, not Kafka, is the
// record of progress. On (re)assignment, partitions the pagination knows are started there; the
// others from the group's committed offsets (or, with a partition owner, from the engine's
// ledger). Commit(up_to) commits the offsets of the stored cursor's pagination to the group,
// synchronously.
//
// Thread-safety: one thread; OnRebalance runs inside the consumer's polls (Read) and its close.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bizon/source.h"
#include "connectors/sources/kafka/kafka_connection.h"
#include "connectors/sources/kafka/message_decoder.h"

namespace bizon::kafka {

class StreamRead final : public KafkaRead, public RebalanceHandler {
 public:
  /// `connection` and `decoder` must outlive it, and it must outlive the connection's consumer
  /// (revocations run when that closes): the connection hands it the group's rebalances.
  StreamRead(const KafkaSourceOptions& options, KafkaConnection& connection,
             MessageDecoder& decoder);

  Status Read(const Value& pagination, SourceIteration& iteration) override;
  Status Commit(const Value& up_to) override;
  bool OnRebalance(bool assigned, ErrorCode reason, PartitionList& partitions) override;
  /// The engine's partition ledger when several members share the topics.
  void SetPartitionOwner(PartitionOwner* owner) { owner_ = owner; }

 private:
  using TopicPartitionKey = std::pair<std::string, int32_t>;

  /// Before each Read: on the first, the resume positions of `pagination` and the
  /// subscription; then the commit an earlier call could not send.
  Status Start(const Value& pagination);
  /// Reads one message (or event) into `iteration`; false when the read of this batch is over.
  Result<bool> ReadOne(Message message, SourceIteration& iteration, int64_t& consumed,
                       std::vector<TopicPartitionKey>& record_partitions);
  void Assigned(PartitionList& partitions, const std::vector<std::optional<int64_t>>& claimed);
  void Revoked(ErrorCode reason, PartitionList& partitions);
  /// The next offset of every partition read so far, by topic.
  Value Pagination() const;
  /// Removes from `records` those of the partitions revoked since the last call
  /// (`record_partitions[i]` is record i's partition, kept in step).
  void DropRevoked(RecordBatch& records, std::vector<TopicPartitionKey>& record_partitions);
  /// True when a static member's consumer dropped its member id (max.poll.interval.ms exceeded)
  /// while it still holds partitions: committing now would fence it.
  bool LostStaticMembership();
  /// Replaces the consumer that left the group; the new one rejoins at our positions.
  Status Recreate(std::string_view why);
  /// Sends the offsets of `up_to` for the partitions still assigned.
  Status SendCommit(const Value& up_to);

  const KafkaSourceOptions& options_;
  KafkaConnection& connection_;
  MessageDecoder& decoder_;
  PartitionOwner* owner_ = nullptr;

  bool subscribed_ = false;
  bool started_ = false;
  /// Next offset of every partition read so far (and of those the resume pagination named).
  std::map<TopicPartitionKey, int64_t> positions_;
  /// Set by OnRebalance within a Read: a claim the ledger refused, and the partitions revoked.
  Status claim_error_;
  std::set<TopicPartitionKey> revoked_in_get_;
  /// What the last Commit() sent, to skip commits that would change nothing.
  std::map<TopicPartitionKey, int64_t> committed_;
  /// A recorded cursor whose commit failed or found no assignment yet: sent again at the next
  /// Read, so that the group's offsets catch up even when no later cursor comes to supersede it.
  std::optional<Value> unsent_commit_;
  std::set<TopicPartitionKey> assigned_;
  std::set<TopicPartitionKey> at_end_;
  /// When Read() last polled: librdkafka drops a member that does not poll within
  /// max.poll.interval.ms.
  std::chrono::steady_clock::time_point last_poll_;
};

}  // namespace bizon::kafka
