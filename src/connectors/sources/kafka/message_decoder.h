// MessageDecoder: one Kafka message to one bizon record. The value is decoded as Avro (writer
// schema from the schema registry) or as UTF-8 JSON; the key as JSON; headers, timestamp,
// topic, partition and offset go beside them into the record JSON (kafka_message.h), and the
// record's destination is the topic's route. The skip_message_* options decide what a message
// that does not decode becomes: skipped, or the error that ends the run.
//
// Thread-safety: not thread-safe; one per source, used from its fetching thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/record_batch.h"
#include "bizon/status.h"
#include "connectors/sources/kafka/kafka_message.h"
#include "connectors/sources/kafka/kafka_options.h"
#include "connectors/sources/kafka/schema_registry.h"
#include "kafka/message.h"

namespace bizon::kafka {

/// The parts of a consumed message the decoder reads, as views into it.
struct MessageFields {
  std::string_view topic;
  int32_t partition = 0;
  int64_t offset = 0;
  /// Milliseconds since the epoch; negative when the message has none (the record then gets
  /// the time it was read).
  int64_t timestamp_ms = -1;
  /// Nullopt when the message has no key; an empty key counts as none.
  std::optional<std::string_view> key;
  /// Empty for a null or empty value (a tombstone).
  std::string_view value;
  std::vector<MessageHeader> headers;
};

class MessageDecoder {
 public:
  /// Reads the topic routes, the encoding (a registry client for avro) and the skip flags.
  explicit MessageDecoder(const KafkaSourceOptions& options);

  /// Appends `message`'s record to `records`, or nothing when a skip flag drops it. Fails when a
  /// key or value does not decode and no skip flag covers it.
  Status Append(const Message& message, RecordBatch& records);
  /// The same on fields already read from a message (what Append(Message) hands over).
  Status Append(MessageFields& message, RecordBatch& records);

 private:
  /// Decodes the value into `parts` (value_json, schema_json), per the encoding.
  Status DecodeValue(const MessageFields& message, RecordParts& parts);
  /// A value that did not decode: logged, then skipped (OK) under skip_message_on_decode_error,
  /// else the error that ends the run.
  Status DecodeFailure(const MessageFields& message, const Status& decoded) const;

  bool avro_;
  bool skip_empty_value_;
  bool skip_invalid_keys_;
  bool skip_on_decode_error_;
  std::map<std::string, std::string, std::less<>> topic_map_;
  std::unique_ptr<SchemaRegistry> registry_;

  // Reused buffers.
  MessageFields fields_;
  std::string value_buffer_;
  std::optional<DecodedJson> json_;
  std::string id_buffer_;
};

}  // namespace bizon::kafka
