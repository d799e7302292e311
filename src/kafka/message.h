// The error codes bizon acts on and one consumed message, without librdkafka's headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct rd_kafka_message_s;  // NOLINT(readability-identifier-naming): librdkafka's type

namespace bizon::kafka {

/// librdkafka's rd_kafka_resp_err_t, by value (message.cc checks each against the header). A
/// code not listed here still travels as its number.
enum class ErrorCode : int {
  kNoError = 0,
  kTransport = -195,
  kResolve = -193,
  kMessageTimedOut = -192,
  kPartitionEof = -191,
  kUnknownTopic = -188,
  kAllBrokersDown = -187,
  kTimedOut = -185,
  kQueueFull = -184,
  kAssignPartitions = -175,
  kRevokePartitions = -174,
  kFatal = -150,
  kMaxPollExceeded = -147,
  kUnknownTopicOrPartition = 3,
  kLeaderNotAvailable = 5,
  kNotLeaderForPartition = 6,
  kRequestTimedOut = 7,
  kMessageSizeTooLarge = 10,
  kCoordinatorLoadInProgress = 14,
  kCoordinatorNotAvailable = 15,
  kNotCoordinator = 16,
  kIllegalGeneration = 22,
  kUnknownMemberId = 25,
  kTopicAlreadyExists = 36,
  kFencedInstanceId = 82,
};

/// "ILLEGAL_GENERATION", as librdkafka names the code.
std::string ErrorName(ErrorCode error);
/// librdkafka's sentence for the code.
std::string ErrorText(ErrorCode error);
/// Errors a consumer reports while it reconnects or rebalances: librdkafka retries them itself.
bool IsTransient(ErrorCode error);

/// Special offsets (librdkafka's RD_KAFKA_OFFSET_*).
inline constexpr int64_t kOffsetStored = -1000;
inline constexpr int64_t kOffsetInvalid = -1001;

/// One message header; `value` is nullopt for a header without a value.
struct Header {
  std::string_view name;
  std::optional<std::string_view> value;
};

/// A message or event from Consumer::Poll, owned; empty when the poll returned nothing.
/// Views it hands out live as long as it does.
class Message {
 public:
  Message() = default;
  explicit Message(rd_kafka_message_s* message) : message_(message) {}
  ~Message();
  Message(Message&& other) noexcept;
  Message& operator=(Message&& other) noexcept;
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;

  explicit operator bool() const { return message_ != nullptr; }

  /// kNoError for a message; an event (end of partition, a consumer error) otherwise.
  ErrorCode error() const;
  /// The error's text (librdkafka's, for this message).
  std::string ErrorText() const;
  /// Empty when the event names no topic.
  std::string_view topic() const;
  int32_t partition() const;
  int64_t offset() const;
  /// Nullopt when the message has no key.
  std::optional<std::string_view> key() const;
  /// The value; empty for a null or empty one (a tombstone).
  std::string_view value() const;
  /// Milliseconds since the epoch, -1 when the message carries none.
  int64_t timestamp_ms() const;
  /// The header at `index`, nullopt past the last one.
  std::optional<Header> HeaderAt(size_t index) const;

 private:
  rd_kafka_message_s* message_ = nullptr;
};

}  // namespace bizon::kafka
