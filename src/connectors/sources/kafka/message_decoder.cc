#include "connectors/sources/kafka/message_decoder.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <utility>

#include "bizon/clock.h"
#include "http/http_session.h"

namespace bizon::kafka {

MessageDecoder::MessageDecoder(const KafkaSourceOptions& options)
    : avro_(options.avro),
      skip_empty_value_(options.skip_message_empty_value),
      skip_invalid_keys_(options.skip_message_invalid_keys),
      skip_on_decode_error_(options.skip_message_on_decode_error) {
  for (const TopicRoute& topic : options.topics) topic_map_[topic.name] = topic.destination_id;
  if (avro_) registry_ = std::make_unique<SchemaRegistry>(options.registry);
}

Status MessageDecoder::Append(const Message& message, RecordBatch& records) {
  fields_.topic = message.topic();
  fields_.partition = message.partition();
  fields_.offset = message.offset();
  fields_.timestamp_ms = message.timestamp_ms();
  fields_.key = message.key();
  fields_.value = message.value();
  fields_.headers.clear();
  for (size_t i = 0;; ++i) {
    std::optional<Header> header = message.HeaderAt(i);
    if (!header) break;
    fields_.headers.emplace_back(header->name, header->value);
  }
  return Append(fields_, records);
}

Status MessageDecoder::Append(MessageFields& message, RecordBatch& records) {
  if (message.value.empty() && skip_empty_value_) return Status::Ok();
  RecordParts parts{.topic = message.topic,
                    .offset = message.offset,
                    .partition = message.partition,
                    .timestamp_ms = message.timestamp_ms};
  if (parts.timestamp_ms < 0) parts.timestamp_ms = NowMicros() / 1000;
  if (message.key.has_value() && !message.key->empty()) {
    auto decoded = DecodeJsonKey(*message.key);
    if (!decoded) {
      if (skip_invalid_keys_) return Status::Ok();
      spdlog::error(
          "Error while parsing message key: {} (topic {} partition {} offset {}), raw key: {}",
          decoded.error().message(), message.topic, message.partition, message.offset,
          BodyExcerpt(*message.key, 200));
      return decoded.error().WithContext(fmt::format(
          "topic {} partition {} offset {}", message.topic, message.partition, message.offset));
    }
    parts.keys_json = *decoded;
  }
  if (Status decoded = DecodeValue(message, parts); !decoded.ok()) {
    return DecodeFailure(message, decoded);
  }
  // The headers move into the record's parts and back, keeping their buffer for the next one.
  parts.headers = std::move(message.headers);
  auto route = topic_map_.find(parts.topic);
  id_buffer_.assign("partition_");
  AppendInteger(id_buffer_, message.partition);
  id_buffer_ += "_offset_";
  AppendInteger(id_buffer_, message.offset);
  AppendRecordJson(records.OpenPayload(), parts);  // Straight into the batch: no copy.
  records.CommitPayload(
      id_buffer_, parts.timestamp_ms * 1000,
      route != topic_map_.end() ? std::string_view(route->second) : std::string_view());
  message.headers = std::move(parts.headers);
  return Status::Ok();
}

Status MessageDecoder::DecodeValue(const MessageFields& message, RecordParts& parts) {
  std::string_view value = message.value;
  if (avro_) {
    value_buffer_.clear();
    BIZON_ASSIGN_OR_RETURN(SchemaHeader header, ParseSchemaHeader(value));
    BIZON_ASSIGN_OR_RETURN(const RegisteredSchema* schema, registry_->Get(header.schema_id));
    BIZON_RETURN_IF_ERROR(schema->decoder.Decode(value.substr(header.length), value_buffer_));
    parts.value_json = value_buffer_;
    parts.schema_json = schema->record_json;
    return Status::Ok();
  }
  BIZON_ASSIGN_OR_RETURN(json_, DecodeJsonValue(value));
  if (json_->replaced_invalid_utf8) {
    spdlog::warn(
        "Message value on topic {} partition {} offset {} is not valid UTF-8: invalid "
        "bytes were replaced by U+FFFD",
        message.topic, message.partition, message.offset);
  }
  parts.value_json = json_->json();
  return Status::Ok();
}

Status MessageDecoder::DecodeFailure(const MessageFields& message, const Status& decoded) const {
  std::string header_names;
  for (const MessageHeader& header : message.headers) {
    header_names += fmt::format("{}{}", header_names.empty() ? "" : ", ", header.first);
  }
  spdlog::error(
      "Error while decoding message value on topic {} partition {} offset {} ({} bytes, "
      "headers [{}]): {}",
      message.topic, message.partition, message.offset, message.value.size(), header_names,
      decoded.message());
  if (skip_on_decode_error_) return Status::Ok();
  return decoded.WithContext(
      fmt::format("cannot decode the value of topic {} partition {} offset {}", message.topic,
                  message.partition, message.offset));
}

}  // namespace bizon::kafka
