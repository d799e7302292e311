// BoundedRead: sync_mode full_refresh (and incremental). One topic, read partition by partition
// from the low watermark up to the high watermark taken on the first Read(); every partition
// advances on its own and the read ends when all of them reached their high watermark. No group
// membership, no commits. Its pagination is where each partition stands:
// {"name": <topic>, "partitions": {"<partition>": {"first", "last", "to_fetch"}}}.
//
// Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "bizon/source.h"
#include "connectors/sources/kafka/kafka_connection.h"
#include "connectors/sources/kafka/message_decoder.h"

namespace bizon::kafka {

class BoundedRead final : public KafkaRead {
 public:
  /// `connection` and `decoder` must outlive it.
  BoundedRead(const KafkaSourceOptions& options, KafkaConnection& connection,
              MessageDecoder& decoder);

  Status Read(const Value& pagination, SourceIteration& iteration) override;
  Status Commit(const Value& up_to) override {
    (void)up_to;
    return Status::Ok();
  }

 private:
  struct Partition {
    int64_t first = 0;
    int64_t last = 0;  // High watermark at start: the read ends here.
    int64_t to_fetch = 0;
    bool done() const { return to_fetch >= last; }
  };

  /// On the first Read: the partitions' bounds (from the pagination, else the watermarks), and
  /// the assignment of those still to read.
  Status Start(const Value& pagination);
  /// The bounds of every partition from the brokers' watermarks.
  Status FetchBounds();
  /// Handles one message or event; `progressed` is set when a partition moved.
  Status ReadOne(const Message& message, RecordBatch& records, int64_t& consumed, bool& progressed);
  /// Stops fetching a partition that reached its end (ignores what arrived after the start).
  void Finish(int32_t partition);
  /// True once every partition reached the high watermark it had at the start.
  bool Done() const;
  /// The error of a Read that read nothing within consumer_timeout.
  Status Stalled() const;
  Value Pagination() const;

  const KafkaSourceOptions& options_;
  KafkaConnection& connection_;
  MessageDecoder& decoder_;
  bool started_ = false;
  std::map<int32_t, Partition> partitions_;
  std::vector<Message> messages_;
};

}  // namespace bizon::kafka
