// Client, Consumer, Producer: RAII owners of one librdkafka client each, with Status and
// ErrorCode results instead of librdkafka's types. The kafka source and the kafka queue create
// their clients here, so setup (checked settings, callbacks) and teardown (leave the group, then
// destroy) are written once.
//
// Thread-safety: a client is used from one thread. Its ClientEvents are called from the thread
// that polls (errors, rebalances, delivery reports) and, for log lines, from librdkafka's own
// threads too; `events` must outlive the client.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bizon/status.h"
#include "kafka/client_config.h"
#include "kafka/message.h"
#include "kafka/partition_list.h"

struct rd_kafka_s;
struct rd_kafka_topic_s;

namespace bizon::kafka {

/// What a client reports while it runs. Texts are already free of registered secrets.
class ClientEvents {
 public:
  virtual ~ClientEvents() = default;
  /// A client-level error (a broker down, a refused login, kFatal), served by a poll.
  virtual void OnError(ErrorCode error, std::string text) = 0;
  /// A log line; `level` as syslog's (3 error, 4 warning, 7 debug). Any thread.
  virtual void OnLog(int level, std::string_view facility, std::string text) = 0;
  /// A subscribed consumer's partitions were assigned (`assigned`) or revoked. On an assignment
  /// the handler may set each partition's start offset; returning false leaves the partitions
  /// unassigned. The consumer assigns or unassigns after the handler returns.
  virtual bool OnRebalance(bool assigned, ErrorCode reason, PartitionList& partitions) {
    (void)assigned;
    (void)reason;
    (void)partitions;
    return true;
  }
};

/// A topic as the brokers' metadata lists it.
struct TopicMetadata {
  std::string name;
  ErrorCode error = ErrorCode::kNoError;
  std::vector<int32_t> partitions;
};

/// What a client's fatal error says; code kNoError while there is none.
struct FatalError {
  ErrorCode code = ErrorCode::kNoError;
  std::string reason;
};

/// What Consumer and Producer share: the handle, its metadata and administration requests.
class Client {
 public:
  virtual ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Every topic (`only_topic` empty) or one, as the brokers list them within `timeout`.
  std::expected<std::vector<TopicMetadata>, ErrorCode> Metadata(std::string_view only_topic,
                                                                std::chrono::milliseconds timeout);
  /// Creates `topic` with `partitions` partitions, the brokers' replication factor and the
  /// given topic settings. A topic that exists already is no error.
  Status CreateTopic(const std::string& topic, int partitions,
                     const std::vector<std::pair<std::string, std::string>>& settings,
                     std::chrono::milliseconds timeout);
  FatalError fatal_error() const;
  /// Serves the events waiting in the client's queue, so that their callbacks run (a
  /// connection's error). A consumer drops the messages it serves: call it before assigning.
  virtual void ServeEvents() = 0;

 protected:
  enum class Kind { kConsumer, kSubscribedConsumer, kProducer };
  using DeliveryReport = void (*)(void* message_opaque, ErrorCode error);

  explicit Client(ClientEvents& events) : events_(events) {}
  /// Creates the handle from `config`, with the callbacks of `kind`.
  Status Start(ClientConfig config, Kind kind, DeliveryReport report = nullptr);

  rd_kafka_s* handle_ = nullptr;
  ClientEvents& events_;

 private:
  friend struct ClientCallbacks;
  DeliveryReport delivery_report_ = nullptr;
};

/// A consumer: manual assignment (Assign) or a group subscription (Subscribe, with
/// ClientEvents::OnRebalance). The destructor leaves the group unless Close() did.
class Consumer final : public Client {
 public:
  /// `subscribe`: the consumer joins its group through Subscribe(), and rebalances reach
  /// `events`. Fails (invalid argument) when librdkafka refuses the configuration.
  static Result<std::unique_ptr<Consumer>> Open(ClientConfig config, ClientEvents& events,
                                                bool subscribe);
  ~Consumer() override;

  /// Leaves the group (revocations run) and stops fetching. Once; later calls do nothing.
  ErrorCode Close();
  void ServeEvents() override;

  /// The next message or event within `timeout`; empty when none came.
  Message Poll(std::chrono::milliseconds timeout);
  /// The next message or event, waiting at most until `deadline`; empty once it has passed.
  Message PollUntil(std::chrono::steady_clock::time_point deadline);
  /// Up to `max` messages or events into `out`: everything already queued at once, else the
  /// first to arrive before `deadline`. Empty once it passed.
  void PollBatch(std::chrono::steady_clock::time_point deadline, size_t max,
                 std::vector<Message>& out);

  ErrorCode Subscribe(const std::vector<std::string>& topics);
  ErrorCode Assign(const PartitionList& partitions);
  /// Commits `offsets` (the next offset to read of each partition) synchronously.
  ErrorCode Commit(const PartitionList& offsets);
  /// Fills in the group's committed offset of each of `partitions` (kOffsetInvalid where the
  /// group has none).
  ErrorCode Committed(PartitionList& partitions, std::chrono::milliseconds timeout);
  /// Stops fetching `topic`'s `partition` (what arrives after the pause is not returned).
  void Pause(std::string_view topic, int32_t partition);

  struct Watermarks {
    int64_t low = 0;
    int64_t high = 0;
  };
  std::expected<Watermarks, ErrorCode> QueryWatermarks(const std::string& topic, int32_t partition,
                                                       std::chrono::milliseconds timeout);
  /// The member id the group coordinator gave; empty when it has none (not joined, or dropped
  /// after max.poll.interval.ms).
  std::string MemberId() const;

 private:
  friend struct ClientCallbacks;
  using Client::Client;
  void Rebalance(ErrorCode reason, PartitionList& partitions);

  bool closed_ = false;
};

/// A producer. Produce() copies the message; its delivery report arrives in a later Poll() or
/// Flush(), through the `report` given to Open with the message's `opaque`.
class Producer final : public Client {
 public:
  using Client::DeliveryReport;
  static Result<std::unique_ptr<Producer>> Open(ClientConfig config, ClientEvents& events,
                                                DeliveryReport report);
  ~Producer() override;

  void ServeEvents() override;
  /// Queues a message for `topic` (an empty `key`: none); kQueueFull when the local queue is
  /// full (Poll and retry).
  ErrorCode Produce(const std::string& topic, std::string_view key, std::string_view value,
                    void* opaque);
  /// Serves delivery reports and events for up to `timeout`.
  void Poll(std::chrono::milliseconds timeout);
  /// Waits up to `timeout` for every queued message's delivery report.
  ErrorCode Flush(std::chrono::milliseconds timeout);

 private:
  using Client::Client;

  /// The topics produced to, by name (librdkafka's handles, destroyed before the client).
  std::map<std::string, rd_kafka_topic_s*> topics_;
};

}  // namespace bizon::kafka
