// KafkaSource: a librdkafka consumer turning messages into bizon records.
//
// Two ways of reading, chosen by sync_mode, each a KafkaRead of its own file:
//
// * stream (stream_read.h): a consumer group over every configured topic; the pagination holds
//   the next offset of every partition read so far, and Commit(up_to) commits a stored cursor's
//   offsets to the group: the stream runner's own cursor after each batch, the thread runner's
//   consumer's latest cursor before the producer's next Get(). It joins as a static member whose
//   id is stable per pipeline and host (StaticMemberId), so a restarted process takes over at
//   once.
// * full_refresh (bounded_read.h): one topic, every partition read up to the high watermark of
//   the first Get(). No group membership, no commits.
//
// Both read through one KafkaConnection (the consumer, kafka_connection.h) and one
// MessageDecoder (message_decoder.h). Options: kafka_options.h.
//
// Lifecycle: constructed by the factory (no network), CheckConnection() creates the consumer,
// Get()/Commit() run on one thread. librdkafka callbacks (rebalance, errors) are served inside
// Get()'s polls, on the same thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "bizon/source.h"
#include "connectors/sources/kafka/kafka_connection.h"
#include "connectors/sources/kafka/kafka_options.h"
#include "connectors/sources/kafka/message_decoder.h"

namespace bizon::kafka {

class StreamRead;

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
  void SetPartitionOwner(PartitionOwner* owner) override;

 private:
  KafkaSourceOptions options_;
  MessageDecoder decoder_;
  /// Declared before the connection: the stream read hears the revocations of its close.
  std::unique_ptr<KafkaRead> read_;
  StreamRead* stream_ = nullptr;  // read_, in stream mode.
  std::unique_ptr<KafkaConnection> connection_;
  /// The size of the last iteration's batch: the next one reserves as much at once instead of
  /// growing (and copying) its buffers a doubling at a time.
  size_t last_batch_records_ = 0;
  size_t last_batch_bytes_ = 0;
};

}  // namespace bizon::kafka
