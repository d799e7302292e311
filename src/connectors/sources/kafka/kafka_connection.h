// KafkaConnection: the kafka source's consumer (kafka/client.h) and what both read modes ask of
// it: creating it from the options' settings, the client's errors, the brokers' metadata, and
// the message errors that end a run.
//
// Lifecycle: Open() creates the consumer (CheckConnection or the first Get), Close() leaves the
// group; Reopen() replaces a consumer that left its group. Client callbacks run inside the
// consumer's polls, on the source's thread; log lines may come from librdkafka's threads.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "bizon/status.h"
#include "connectors/sources/kafka/kafka_options.h"
#include "kafka/client.h"
#include "kafka/kafka_security.h"

namespace bizon::kafka {

/// Partition assignments and revocations of a subscribed consumer (the stream read).
class RebalanceHandler {
 public:
  virtual ~RebalanceHandler() = default;
  /// As ClientEvents::OnRebalance: may set start offsets; false leaves them unassigned.
  virtual bool OnRebalance(bool assigned, ErrorCode reason, PartitionList& partitions) = 0;
};

/// Builds the consumer's configuration from `options`: each client setting, checked, with the
/// YAML path it came from, then bizon's own defaults unless the settings name them.
Result<ClientConfig> ConsumerConfig(const KafkaSourceOptions& options);

class KafkaConnection final : public ClientEvents {
 public:
  /// In stream mode the consumer subscribes, and the group's rebalances go to the handler set
  /// with SetRebalanceHandler.
  explicit KafkaConnection(const KafkaSourceOptions& options);
  ~KafkaConnection() override;
  KafkaConnection(const KafkaConnection&) = delete;
  KafkaConnection& operator=(const KafkaConnection&) = delete;

  /// `handler` must outlive the consumer (it hears the revocations of Close()).
  void SetRebalanceHandler(RebalanceHandler* handler) { rebalance_ = handler; }
  /// Creates the consumer unless there is one.
  Status Open();
  /// Leaves the group and destroys the consumer (nothing when there is none).
  void Close();
  /// Replaces the consumer after it left the group (`why` leads the warning); the fatal error
  /// of the old one is forgotten.
  Status Reopen(std::string_view why);
  bool is_open() const { return consumer_ != nullptr; }
  /// The consumer; only while is_open().
  Consumer& consumer() { return *consumer_; }

  /// The client's fatal error, as an unavailable status.
  Status CheckFatalError();
  /// The consumer's fatal error, with a hint for a fenced static member.
  std::string FatalErrorText() const;
  /// A message carrying an error: fails unless it is transient (reported, then retried by
  /// librdkafka itself).
  Status HandleMessageError(const Message& message) const;
  /// Partition counts of every configured topic (metadata request); fails on a missing topic.
  Result<std::map<std::string, int>> FetchPartitionCounts();

  static constexpr std::string_view kNoInstanceId = "(none)";
  /// The configured or derived group.instance.id (kNoInstanceId without static membership).
  std::string InstanceId() const;
  /// max.poll.interval.ms: librdkafka drops a member that does not poll within it.
  std::chrono::steady_clock::duration MaxPollInterval() const;
  std::chrono::milliseconds timeout() const;

  // ClientEvents.
  void OnError(ErrorCode error, std::string text) override;
  void OnLog(int level, std::string_view facility, std::string text) override;
  bool OnRebalance(bool assigned, ErrorCode reason, PartitionList& partitions) override;

 private:
  const KafkaSourceOptions& options_;
  RebalanceHandler* rebalance_ = nullptr;
  std::unique_ptr<Consumer> consumer_;
  std::mutex fatal_mutex_;
  std::string fatal_error_;
  /// The last non-fatal client error (an authentication or TLS failure, a refused connection),
  /// secrets masked: a connection check that times out names it.
  LastClientError last_client_error_;
};

}  // namespace bizon::kafka

namespace bizon::kafka {

/// One way of reading the topics over the source's connection: StreamRead (a consumer group,
/// stream_read.h) or BoundedRead (up to the watermarks of the start, bounded_read.h).
class KafkaRead {
 public:
  virtual ~KafkaRead() = default;
  /// Reads the batch after `pagination` into `iteration`, whose records the caller reserved,
  /// and sets its next pagination. The connection is open.
  virtual Status Read(const Value& pagination, SourceIteration& iteration) = 0;
  /// Commits a recorded cursor's pagination to the group (a bounded read has no group).
  virtual Status Commit(const Value& up_to) = 0;
};

}  // namespace bizon::kafka
