#include "connectors/sources/kafka/kafka_connection.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <utility>

namespace bizon::kafka {
namespace {

/// queued.max.messages.kbytes unless consumer_config sets it (librdkafka's default: 65536). 1M
/// messages of ~300 B into a file: 4 MiB reads as fast as 16 MiB (1.7-1.8 s) with 77 MiB peak RSS
/// instead of 101-107 MiB; 2 MiB saves little more.
constexpr std::string_view kDefaultPrefetchKbytes = "4096";

}  // namespace

Result<ClientConfig> ConsumerConfig(const KafkaSourceOptions& options) {
  ClientConfig config;
  for (const auto& [key, value] : options.client_settings) {
    auto path = options.setting_paths.find(key);
    BIZON_RETURN_IF_ERROR(config.Set(
        key, value, path != options.setting_paths.end() ? path->second : "source.consumer_config"));
  }
  // End-of-partition events tell a bounded read that a partition is done, and a stream read
  // that it caught up and may return before consumer_timeout.
  if (FindSetting(options, "enable.partition.eof") == nullptr) {
    BIZON_RETURN_IF_ERROR(config.Set("enable.partition.eof", "true"));
  }
  // librdkafka prefetches up to 64 MiB (and 100,000 messages) by default, beside the engine's
  // own queue. 4 MiB, refilled 10 ms after it fills, reads as fast (fetch.queue.backoff.ms, from
  // librdkafka 2.1; before it a full prefetch queue stopped fetching for a whole second).
  if (FindSetting(options, "queued.max.messages.kbytes") == nullptr &&
      FindSetting(options, "fetch.queue.backoff.ms") == nullptr) {
    BIZON_RETURN_IF_ERROR(config.Set("queued.max.messages.kbytes", kDefaultPrefetchKbytes));
    BIZON_RETURN_IF_ERROR(config.Set("fetch.queue.backoff.ms", "10"));
  }
  return config;
}

KafkaConnection::KafkaConnection(const KafkaSourceOptions& options) : options_(options) {}

KafkaConnection::~KafkaConnection() { Close(); }

Status KafkaConnection::Open() {
  if (consumer_ != nullptr) return Status::Ok();
  BIZON_ASSIGN_OR_RETURN(ClientConfig config, ConsumerConfig(options_));
  bool subscribe = options_.sync_mode == SyncMode::kStream;
  auto consumer = Consumer::Open(std::move(config), *this, subscribe);
  if (!consumer) {
    return InvalidArgumentError(
        fmt::format("cannot create the Kafka consumer: {}", consumer.error().message()));
  }
  consumer_ = std::move(*consumer);
  return Status::Ok();
}

void KafkaConnection::Close() {
  if (consumer_ == nullptr) return;
  // Revocations run inside Close(), while consumer() still answers.
  if (ErrorCode closed = consumer_->Close(); closed != ErrorCode::kNoError) {
    spdlog::warn("Error while closing the Kafka consumer: {}", ErrorText(closed));
  }
  consumer_.reset();
}

Status KafkaConnection::Reopen(std::string_view why) {
  spdlog::warn("{}: the consumer left the group; recreating it", why);
  Close();
  {
    // The old consumer's fatal state (a fence by itself) dies with it.
    std::lock_guard lock(fatal_mutex_);
    fatal_error_.clear();
  }
  return Open();
}

std::string KafkaConnection::FatalErrorText() const {
  FatalError fatal = consumer_ != nullptr ? consumer_->fatal_error() : FatalError{};
  std::string text =
      fmt::format("fatal Kafka client error {}: {}", ErrorName(fatal.code), fatal.reason);
  if (fatal.code == ErrorCode::kFencedInstanceId) {
    // Two live processes derived the same static member id.
    text += fmt::format(
        " (another consumer joined the group with this process's group.instance.id: give each "
        "process of one pipeline on one host its own source.member; id {})",
        InstanceId());
  }
  return text;
}

Status KafkaConnection::CheckFatalError() {
  std::lock_guard lock(fatal_mutex_);
  if (fatal_error_.empty()) return Status::Ok();
  return UnavailableError(fatal_error_);
}

void KafkaConnection::OnError(ErrorCode error, std::string text) {
  if (error == ErrorCode::kFatal) {
    std::string fatal = FatalErrorText();
    std::lock_guard lock(fatal_mutex_);
    fatal_error_ = std::move(fatal);
    return;
  }
  spdlog::warn("Kafka client error {}: {}", ErrorName(error), text);
  last_client_error_.OnError(static_cast<int>(error), std::move(text));
}

void KafkaConnection::OnLog(int level, std::string_view facility, std::string text) {
  if (facility == "FAIL") {
    // Kept for the message of a connection that does not come up; not logged, since librdkafka
    // retries and a broker restart is expected.
    last_client_error_.OnLog(facility, std::move(text));
    return;
  }
  if (level <= 3) {
    spdlog::error("librdkafka {}: {}", facility, text);
  } else if (level == 4) {
    spdlog::warn("librdkafka {}: {}", facility, text);
  } else {
    spdlog::debug("librdkafka {}: {}", facility, text);
  }
}

bool KafkaConnection::OnRebalance(bool assigned, ErrorCode reason, PartitionList& partitions) {
  return rebalance_ == nullptr || rebalance_->OnRebalance(assigned, reason, partitions);
}

std::string KafkaConnection::InstanceId() const {
  const std::string* id = FindSetting(options_, "group.instance.id");
  return id != nullptr && !id->empty() ? *id : std::string(kNoInstanceId);
}

std::chrono::steady_clock::duration KafkaConnection::MaxPollInterval() const {
  const std::string* interval = FindSetting(options_, "max.poll.interval.ms");
  if (interval == nullptr) return std::chrono::milliseconds(300000);  // librdkafka's default.
  return std::chrono::milliseconds(std::strtoll(interval->c_str(), nullptr, 10));
}

std::chrono::milliseconds KafkaConnection::timeout() const {
  return std::chrono::milliseconds(options_.consumer_timeout_s * 1000);
}

Result<std::map<std::string, int>> KafkaConnection::FetchPartitionCounts() {
  auto metadata = consumer_->Metadata("", timeout());
  if (!metadata) {
    // The client's error events (a refused login, a failed handshake) wait in its queue until
    // served: serve them, so the message can name the last one. Nothing is assigned yet, so no
    // message is dropped here.
    consumer_->ServeEvents();
    return Fail(UnavailableError(
        fmt::format("Kafka connection failed: {} (bootstrap servers {}, within {} s){}",
                    ErrorText(metadata.error()), options_.bootstrap_servers,
                    options_.consumer_timeout_s, ConnectionHint(last_client_error_.Get()))));
  }
  std::map<std::string, int> counts;
  for (const TopicMetadata& topic : *metadata) {
    if (topic.error != ErrorCode::kNoError) continue;
    counts[topic.name] = static_cast<int>(topic.partitions.size());
  }
  for (const TopicRoute& topic : options_.topics) {
    if (!counts.contains(topic.name)) {
      return Fail(NotFoundError(fmt::format("Topic {} not found", topic.name)));
    }
  }
  return counts;
}

Status KafkaConnection::HandleMessageError(const Message& message) const {
  if (message.error() == ErrorCode::kFatal) return UnavailableError(FatalErrorText());
  if (IsTransient(message.error())) {
    spdlog::warn("Kafka consumer: {} (topic {} partition {}); retrying", message.ErrorText(),
                 message.topic(), message.partition());
    return Status::Ok();
  }
  if (message.error() == ErrorCode::kMessageSizeTooLarge ||
      message.error() == ErrorCode::kMessageTimedOut) {
    spdlog::error(
        "Kafka message too large on topic {} partition {} offset {}: raise fetch.max.bytes / "
        "max.partition.fetch.bytes in consumer_config",
        message.topic(), message.partition(), message.offset());
  }
  return UnavailableError(fmt::format("Kafka consumer error on topic {} partition {}: {}",
                                      message.topic(), message.partition(), message.ErrorText()));
}

}  // namespace bizon::kafka
