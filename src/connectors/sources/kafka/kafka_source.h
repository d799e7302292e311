// KafkaSource: a librdkafka consumer turning messages into bizon records.
//
// Two ways of reading, chosen by sync_mode:
//
// * stream: subscribes to every configured topic once (consumer group `group_id`) and returns up
//   to batch_size messages per Get(). Its pagination is the next offset of every partition read
//   so far, {"<topic>": {"<partition>": next_offset}}: the stream runner stores it in the
//   destination cursor after the durable write, so the backend, not Kafka, is the record of
//   progress. On (re)assignment, partitions the pagination knows are started there; the others
//   from the group's committed offsets. Commit(up_to) commits the offsets of the stored cursor's
//   pagination to the group, synchronously: the stream runner's own cursor after each batch,
//   the thread runner's consumer's latest cursor before the producer's next Get(). It joins as a
//   static member whose id is stable per pipeline and host (StaticMemberId), so a restarted process
//   takes over at once.
// * full_refresh: one topic, read partition by partition from the low watermark up to the high
//   watermark taken on the first Get(); every partition advances on its own and the read ends
//   when all of them reached their high watermark. No group membership, no commits.
//
// Lifecycle: constructed by the factory (no network), CheckConnection() creates the consumer,
// Get()/Commit() run on one thread. librdkafka callbacks (rebalance, errors) are served inside
// Get()'s polls, on the same thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bizon/registry.h"
#include "bizon/source.h"
#include "connectors/sources/kafka/schema_registry.h"
#include "kafka/kafka_security.h"

struct rd_kafka_s;
struct rd_kafka_message_s;
struct rd_kafka_topic_partition_list_s;

namespace bizon::kafka {

struct RecordParts;

struct TopicRoute {
  std::string name;
  std::string destination_id;
};

/// What ReadKafkaOptions() reads, each option against its declaration in kafka_spec.cc (which
/// holds the defaults: the values here only make a blank struct well-formed for tests).
struct KafkaSourceOptions {
  SyncMode sync_mode = SyncMode::kStream;
  std::vector<TopicRoute> topics;
  std::string bootstrap_servers;
  std::string group_id;
  bool skip_message_empty_value = false;
  bool skip_message_invalid_keys = false;
  bool skip_message_on_decode_error = false;
  int64_t batch_size = 1;
  int64_t consumer_timeout_s = 0;
  bool avro = false;
  /// False: Commit() leaves the group's offsets alone (commit_offsets: production outside
  /// ENVIRONMENT=production).
  bool commit_offsets = true;
  /// Tells apart processes of one pipeline on one host in its static member id (scale-out).
  std::string member;
  /// The librdkafka settings, in order, with the derived ones (bootstrap.servers, group.id,
  /// SASL, group.instance.id) already applied.
  std::vector<std::pair<std::string, std::string>> client_settings;
  SchemaRegistryOptions registry;
};

/// Reads the validated `source:` block into options. In stream mode it derives the static
/// member id (group.instance.id) from the pipeline, the host and `member`, unless the
/// consumer_config names one.
Result<KafkaSourceOptions> ReadKafkaOptions(const SourceContext& context);

/// This host's name: HOSTNAME when exported (a pod's name), else gethostname(); empty when
/// neither is known.
std::string HostName();

/// The group.instance.id of one process: `<pipeline>.<host>[.<member>]`, stable across restarts
/// so that a restarted process fences its dead predecessor at once and takes over its
/// partitions. Characters Kafka refuses become `_`; then, or past Kafka's 249 characters, a hash
/// of the exact parts is appended so that distinct inputs keep distinct ids.
std::string StaticMemberId(std::string_view pipeline, std::string_view host,
                           std::string_view member);

/// The declared options of the kafka source (its config spec).
std::vector<FieldSpec> KafkaSourceFields();

/// Before validation (the descriptor's normalize_config): each `streams:` entry's `source.topic`
/// is routed to its `destination.table_id`. An empty `topics` list is filled from the streams,
/// and a topic listed in both takes the stream's table (the streams block wins, as in the
/// original). `config` is the whole raw pipeline config.
void TopicsFromStreams(Value& config);

class KafkaSource final : public Source {
 public:
  explicit KafkaSource(KafkaSourceOptions options);
  ~KafkaSource() override;
  KafkaSource(const KafkaSource&) = delete;
  KafkaSource& operator=(const KafkaSource&) = delete;

  Status CheckConnection() override;
  std::optional<int64_t> TotalRecordsCount() override;
  Result<SourceIteration> Get(const Value& pagination) override;
  Status Commit(const Value& up_to) override;
  /// The static member id (group.instance.id) in stream mode, else "" (read whole).
  std::string MemberId() const override;
  void SetPartitionOwner(PartitionOwner* owner) override { owner_ = owner; }

  /// Called by librdkafka's callbacks, inside Get()'s polls.
  void Rebalance(int error, rd_kafka_topic_partition_list_s* partitions);
  void ClientError(int error, const char* reason);
  /// From the log callback: keeps a broker connection's failure for the connection message.
  void ClientLog(const char* facility, std::string line) {
    last_client_error_.OnLog(facility, std::move(line));
  }

 private:
  using TopicPartition = std::pair<std::string, int32_t>;
  struct BoundedPartition {
    int64_t first = 0;
    int64_t last = 0;  // High watermark at start: the read ends here.
    int64_t to_fetch = 0;
    bool done() const { return to_fetch >= last; }
  };

  Status CreateConsumer();
  void DestroyConsumer();
  Status CheckFatalError();
  /// The consumer's fatal error, with a hint for a fenced static member.
  std::string FatalErrorText() const;
  static constexpr std::string_view kNoInstanceId = "(none)";
  /// The configured or derived group.instance.id (kNoInstanceId without static membership).
  std::string InstanceId() const;
  std::chrono::steady_clock::duration MaxPollInterval() const;
  /// True when a static member's consumer dropped its member id (max.poll.interval.ms exceeded)
  /// while it still holds partitions: committing now would fence it.
  bool LostStaticMembership() const;
  /// Replaces the consumer after it left the group (`why` leads the warning); the new one
  /// rejoins at our positions.
  Status RecreateConsumer(std::string_view why);
  /// Partition counts of every configured topic (metadata request); fails on a missing topic.
  Result<std::map<std::string, int>> FetchPartitionCounts();

  Result<SourceIteration> GetStream(const Value& pagination);
  /// Before each stream Get: on the first, the resume positions of `pagination` and the
  /// subscription; then the commit an earlier call could not send.
  Status StartStream(const Value& pagination);
  /// The next offset of every partition read so far, by topic.
  Value StreamPagination() const;
  /// Removes from `records` those of the partitions revoked since the last call
  /// (`record_partitions[i]` is record i's partition, kept in step).
  void DropRevoked(RecordBatch& records, std::vector<TopicPartition>& record_partitions);
  Result<SourceIteration> GetBounded(const Value& pagination);
  Status StartBounded(const Value& pagination);
  /// True once every partition reached the high watermark it had at the start.
  bool BoundedDone() const;
  /// The error of a bounded Get that read nothing within consumer_timeout.
  Status BoundedStalled() const;
  /// Where each partition of the bounded read stands.
  Value BoundedPagination() const;
  /// Turns one message into a record (or skips it, per the skip flags).
  Status AddMessage(const rd_kafka_message_s& message, RecordBatch& records);
  /// A value that did not decode: logged, then skipped (OK) under skip_message_on_decode_error,
  /// else the error that ends the run.
  Status DecodeFailure(const rd_kafka_message_s& message, std::string_view topic,
                       const Status& decoded) const;
  /// Appends the message's record, made of `parts` and the message's headers, to `records`.
  void AppendRecord(const rd_kafka_message_s& message, RecordParts& parts, RecordBatch& records);
  /// A message carrying an error: fails unless it is transient (reported, then retried by
  /// librdkafka itself).
  Status HandleMessageError(const rd_kafka_message_s& message);

  KafkaSourceOptions options_;
  std::map<std::string, std::string, std::less<>> topic_map_;
  std::unique_ptr<SchemaRegistry> registry_;
  rd_kafka_s* consumer_ = nullptr;

  std::mutex fatal_mutex_;
  std::string fatal_error_;
  /// The last non-fatal client error (an authentication or TLS failure, a refused connection),
  /// secrets masked: a connection check that times out names it.
  kafka::LastClientError last_client_error_;

  // Stream mode.
  bool subscribed_ = false;
  bool started_ = false;
  /// Next offset of every partition read so far (and of those the resume pagination named).
  std::map<TopicPartition, int64_t> positions_;
  /// The engine's partition ledger when several members share the topics (null otherwise).
  PartitionOwner* owner_ = nullptr;
  /// Set by Rebalance within a Get: a claim the ledger refused, and the partitions revoked.
  Status claim_error_;
  std::set<TopicPartition> revoked_in_get_;
  /// What the last Commit() sent, to skip commits that would change nothing.
  std::map<TopicPartition, int64_t> committed_;
  /// A recorded cursor whose commit failed or found no assignment yet: sent again at the next
  /// Get, so that the group's offsets catch up even when no later cursor comes to supersede it.
  std::optional<Value> unsent_commit_;
  std::set<TopicPartition> assigned_;
  std::set<TopicPartition> at_end_;
  /// When Get() last polled: librdkafka drops a member that does not poll within
  /// max.poll.interval.ms.
  std::chrono::steady_clock::time_point last_poll_;

  // Bounded mode.
  std::map<int32_t, BoundedPartition> bounded_;

  // Reused buffers.
  std::string value_buffer_;
  std::string id_buffer_;
  /// The size of the last iteration's batch: the next one reserves as much at once instead of
  /// growing (and copying) its buffers a doubling at a time.
  size_t last_batch_records_ = 0;
  size_t last_batch_bytes_ = 0;
};

}  // namespace bizon::kafka
