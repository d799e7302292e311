#include "kafka/message.h"

#include <librdkafka/rdkafka.h>

#include <utility>

namespace bizon::kafka {

// The values message.h spells out are librdkafka's.
static_assert(static_cast<int>(ErrorCode::kTransport) == RD_KAFKA_RESP_ERR__TRANSPORT);
static_assert(static_cast<int>(ErrorCode::kResolve) == RD_KAFKA_RESP_ERR__RESOLVE);
static_assert(static_cast<int>(ErrorCode::kMessageTimedOut) == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT);
static_assert(static_cast<int>(ErrorCode::kPartitionEof) == RD_KAFKA_RESP_ERR__PARTITION_EOF);
static_assert(static_cast<int>(ErrorCode::kUnknownTopic) == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC);
static_assert(static_cast<int>(ErrorCode::kAllBrokersDown) == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN);
static_assert(static_cast<int>(ErrorCode::kTimedOut) == RD_KAFKA_RESP_ERR__TIMED_OUT);
static_assert(static_cast<int>(ErrorCode::kQueueFull) == RD_KAFKA_RESP_ERR__QUEUE_FULL);
static_assert(static_cast<int>(ErrorCode::kAssignPartitions) ==
              RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS);
static_assert(static_cast<int>(ErrorCode::kRevokePartitions) ==
              RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS);
static_assert(static_cast<int>(ErrorCode::kFatal) == RD_KAFKA_RESP_ERR__FATAL);
static_assert(static_cast<int>(ErrorCode::kMaxPollExceeded) ==
              RD_KAFKA_RESP_ERR__MAX_POLL_EXCEEDED);
static_assert(static_cast<int>(ErrorCode::kUnknownTopicOrPartition) ==
              RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
static_assert(static_cast<int>(ErrorCode::kLeaderNotAvailable) ==
              RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE);
static_assert(static_cast<int>(ErrorCode::kNotLeaderForPartition) ==
              RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION);
static_assert(static_cast<int>(ErrorCode::kRequestTimedOut) == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
static_assert(static_cast<int>(ErrorCode::kMessageSizeTooLarge) ==
              RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
static_assert(static_cast<int>(ErrorCode::kCoordinatorLoadInProgress) ==
              RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS);
static_assert(static_cast<int>(ErrorCode::kCoordinatorNotAvailable) ==
              RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE);
static_assert(static_cast<int>(ErrorCode::kNotCoordinator) == RD_KAFKA_RESP_ERR_NOT_COORDINATOR);
static_assert(static_cast<int>(ErrorCode::kIllegalGeneration) ==
              RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION);
static_assert(static_cast<int>(ErrorCode::kUnknownMemberId) == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID);
static_assert(static_cast<int>(ErrorCode::kTopicAlreadyExists) ==
              RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS);
static_assert(static_cast<int>(ErrorCode::kFencedInstanceId) ==
              RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID);
static_assert(kOffsetStored == RD_KAFKA_OFFSET_STORED);
static_assert(kOffsetInvalid == RD_KAFKA_OFFSET_INVALID);

std::string ErrorName(ErrorCode error) {
  return rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(error));
}

std::string ErrorText(ErrorCode error) {
  return rd_kafka_err2str(static_cast<rd_kafka_resp_err_t>(error));
}

bool IsTransient(ErrorCode error) {
  switch (error) {
    case ErrorCode::kTransport:
    case ErrorCode::kAllBrokersDown:
    case ErrorCode::kTimedOut:
    case ErrorCode::kResolve:
    case ErrorCode::kMaxPollExceeded:
    case ErrorCode::kNotLeaderForPartition:
    case ErrorCode::kLeaderNotAvailable:
    case ErrorCode::kNotCoordinator:
    case ErrorCode::kCoordinatorNotAvailable:
    case ErrorCode::kCoordinatorLoadInProgress:
    case ErrorCode::kRequestTimedOut:
      return true;
    default:
      return false;
  }
}

Message::~Message() {
  if (message_ != nullptr) rd_kafka_message_destroy(message_);
}

Message::Message(Message&& other) noexcept : message_(std::exchange(other.message_, nullptr)) {}

Message& Message::operator=(Message&& other) noexcept {
  if (this != &other) {
    if (message_ != nullptr) rd_kafka_message_destroy(message_);
    message_ = std::exchange(other.message_, nullptr);
  }
  return *this;
}

ErrorCode Message::error() const { return static_cast<ErrorCode>(message_->err); }

std::string Message::ErrorText() const { return rd_kafka_message_errstr(message_); }

std::string_view Message::topic() const {
  return message_->rkt != nullptr ? rd_kafka_topic_name(message_->rkt) : "";
}

int32_t Message::partition() const { return message_->partition; }

int64_t Message::offset() const { return message_->offset; }

std::optional<std::string_view> Message::key() const {
  if (message_->key == nullptr) return std::nullopt;
  return std::string_view(static_cast<const char*>(message_->key), message_->key_len);
}

std::string_view Message::value() const {
  if (message_->payload == nullptr) return {};
  return {static_cast<const char*>(message_->payload), message_->len};
}

int64_t Message::timestamp_ms() const {
  rd_kafka_timestamp_type_t type;
  return rd_kafka_message_timestamp(message_, &type);
}

std::optional<Header> Message::HeaderAt(size_t index) const {
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(message_, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return std::nullopt;
  }
  const char* name;
  const void* value;
  size_t size;
  if (rd_kafka_header_get_all(headers, index, &name, &value, &size) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return std::nullopt;
  }
  Header header{.name = name};
  if (value != nullptr) header.value = std::string_view(static_cast<const char*>(value), size);
  return header;
}

}  // namespace bizon::kafka
