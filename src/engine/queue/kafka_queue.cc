#include "engine/queue/kafka_queue.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "kafka/client.h"
#include "kafka/kafka_security.h"

namespace bizon {
namespace {

// Room for Kafka's own record and batch overhead beside a frame.
constexpr int64_t kRecordOverhead = 1024;

Status KafkaError(std::string what, StatusCode code = StatusCode::kUnavailable) {
  return Status(code, "kafka queue: " + std::move(what), FailureClass::kQueue);
}

/// One per process: a client's callbacks may still run while its handle is destroyed.
kafka::LastClientError& LastClientError() {
  static auto* last = new kafka::LastClientError();
  return *last;
}

/// The queue's clients' events: errors kept for the message of a connection that does not come
/// up, log lines at debug unless they are errors. One per process, for the same reason.
class QueueClientEvents final : public kafka::ClientEvents {
 public:
  static QueueClientEvents& Get() {
    static auto* events = new QueueClientEvents();
    return *events;
  }
  void OnError(kafka::ErrorCode error, std::string text) override {
    LastClientError().OnError(static_cast<int>(error), std::move(text));
  }
  void OnLog(int level, std::string_view facility, std::string text) override {
    // librdkafka logs every lost connection; a broker restart is expected and retried, so these
    // stay at debug unless they are errors it could not recover from.
    LastClientError().OnLog(facility, text);
    if (level <= 3) {
      spdlog::warn("kafka {}: {}", facility, text);
    } else {
      spdlog::debug("kafka {}: {}", facility, text);
    }
  }
};

/// A failure of the kafka wrapper (kafka/client.h) as the queue's.
Status QueueFailure(const Status& status, StatusCode code) {
  return Status(code, "kafka queue: " + status.message(), FailureClass::kQueue);
}

/// Settings bizon sets for its delivery guarantees; queue.client_config may not change them.
bool IsReservedSetting(std::string_view key) {
  for (std::string_view reserved :
       {"bootstrap.servers", "group.id", "enable.auto.commit", "enable.auto.offset.store",
        "auto.offset.reset", "enable.idempotence", "acks", "message.timeout.ms",
        "enable.partition.eof"}) {
    if (key == reserved) return true;
  }
  return false;
}

/// Sets one setting, its error the queue's.
Status Set(kafka::ClientConfig& conf, const std::string& name, const std::string& value,
           std::string_view path = {}) {
  Status set = conf.Set(name, value, path);
  return set.ok() ? set : QueueFailure(set, StatusCode::kInvalidArgument);
}

/// Creates the topic when it does not exist: one partition (bizon keeps a job's frames in
/// order), the broker's replication factor, and room for the configured frame size.
Status EnsureTopic(kafka::Client& client, const KafkaQueueConfig& config) {
  auto metadata = client.Metadata("", std::chrono::milliseconds(10'000));
  if (!metadata) {
    client.ServeEvents();
    return KafkaError(fmt::format("cannot reach the brokers at {}: {}{}", config.bootstrap_servers,
                                  kafka::ErrorText(metadata.error()),
                                  kafka::ConnectionHint(LastClientError().Get())));
  }
  for (const kafka::TopicMetadata& topic : *metadata) {
    if (topic.name == config.topic && topic.error == kafka::ErrorCode::kNoError) {
      return Status::Ok();
    }
  }
  std::string max_bytes = std::to_string(config.max_message_bytes + kRecordOverhead);
  Status created = client.CreateTopic(config.topic, 1, {{"max.message.bytes", max_bytes}},
                                      std::chrono::milliseconds(30'000));
  if (!created.ok()) return QueueFailure(created, created.code());
  spdlog::info("Queue: created Kafka topic {}", config.topic);
  return Status::Ok();
}

// What the delivery reports of one Send() fill in.
struct DeliveryBatch {
  size_t pending = 0;
  kafka::ErrorCode first_error = kafka::ErrorCode::kNoError;
};

void OnDelivery(void* opaque, kafka::ErrorCode error) {
  auto* batch = static_cast<DeliveryBatch*>(opaque);
  if (batch == nullptr) return;
  if (error != kafka::ErrorCode::kNoError && batch->first_error == kafka::ErrorCode::kNoError) {
    batch->first_error = error;
  }
  --batch->pending;
}

class KafkaSender final : public BrokerSender {
 public:
  KafkaSender(std::unique_ptr<kafka::Producer> producer, KafkaQueueConfig config)
      : producer_(std::move(producer)), config_(std::move(config)) {}
  ~KafkaSender() override {
    // Everything Send() published was acknowledged already; nothing is left to flush.
    producer_->Flush(std::chrono::milliseconds(1000));
  }
  KafkaSender(const KafkaSender&) = delete;
  KafkaSender& operator=(const KafkaSender&) = delete;

  Status Send(std::string_view key, const std::vector<std::string>& frames) override {
    DeliveryBatch batch;
    for (const std::string& frame : frames) {
      while (true) {
        kafka::ErrorCode err = producer_->Produce(config_.topic, key, frame, &batch);
        if (err == kafka::ErrorCode::kNoError) {
          ++batch.pending;
          break;
        }
        if (err != kafka::ErrorCode::kQueueFull) {
          WaitFor(batch);  // The batch's reports must arrive before it goes out of scope.
          return KafkaError(
              fmt::format("cannot publish to topic {}: {}", config_.topic, kafka::ErrorText(err)));
        }
        // The local queue is full: let deliveries drain.
        producer_->Poll(std::chrono::milliseconds(50));
      }
    }
    WaitFor(batch);
    if (batch.first_error != kafka::ErrorCode::kNoError) {
      return KafkaError(fmt::format("the brokers did not acknowledge a message on topic {}: {}",
                                    config_.topic, kafka::ErrorText(batch.first_error)));
    }
    return Status::Ok();
  }

  size_t max_frame_bytes() const override { return static_cast<size_t>(config_.max_message_bytes); }

 private:
  // Delivery reports come within message.timeout.ms, success or failure, so this ends.
  void WaitFor(DeliveryBatch& batch) {
    while (batch.pending > 0) producer_->Poll(std::chrono::milliseconds(100));
  }

  std::unique_ptr<kafka::Producer> producer_;
  KafkaQueueConfig config_;
};

class KafkaReceiver final : public BrokerReceiver {
 public:
  KafkaReceiver(std::unique_ptr<kafka::Consumer> consumer, KafkaQueueConfig config)
      : consumer_(std::move(consumer)), config_(std::move(config)) {}

  Status Assign() {
    // A topic EnsureTopic() just created can be missing from the metadata, or listed without
    // partitions, until the brokers have all learnt of it: assigning nothing then would read
    // nothing for ever. Asked again for up to ten seconds.
    BIZON_ASSIGN_OR_RETURN(std::vector<int32_t> ids, PartitionIds());
    for (int attempt = 0; ids.empty() && attempt < kMetadataAttempts; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      BIZON_ASSIGN_OR_RETURN(ids, PartitionIds());
    }
    if (ids.empty()) {
      return KafkaError(
          fmt::format("topic {} has no partitions in the brokers' metadata", config_.topic));
    }
    kafka::PartitionList partitions(static_cast<int>(ids.size()));
    for (int32_t id : ids) {
      // The group's committed offset, else the reset rule.
      partitions.Add(config_.topic, id, kafka::kOffsetStored);
    }
    if (kafka::ErrorCode err = consumer_->Assign(partitions); err != kafka::ErrorCode::kNoError) {
      return KafkaError(
          fmt::format("cannot read topic {}: {}", config_.topic, kafka::ErrorText(err)));
    }
    spdlog::info("Queue: reading Kafka topic {} ({} partitions) as group {}", config_.topic,
                 ids.size(), config_.group_id);
    return Status::Ok();
  }

  Result<std::optional<ReceivedFrame>> Receive(std::chrono::milliseconds timeout) override {
    kafka::Message message = consumer_->Poll(timeout);
    if (!message) return std::optional<ReceivedFrame>();
    if (message.error() != kafka::ErrorCode::kNoError) {
      if (kafka::FatalError fatal = consumer_->fatal_error();
          fatal.code != kafka::ErrorCode::kNoError) {
        return Fail(KafkaError(fmt::format("the consumer failed: {}", fatal.reason)));
      }
      if (message.error() == kafka::ErrorCode::kUnknownTopic ||
          message.error() == kafka::ErrorCode::kUnknownTopicOrPartition) {
        return Fail(KafkaError(fmt::format("topic {} does not exist", config_.topic),
                               StatusCode::kNotFound));
      }
      // Transient (a broker restarting): librdkafka reconnects and fetching resumes.
      spdlog::debug("kafka consumer: {}", message.ErrorText());
      return std::optional<ReceivedFrame>();
    }
    ReceivedFrame frame{.bytes = std::string(message.value()),
                        .position = {.lane = message.partition(), .offset = message.offset()}};
    return std::optional<ReceivedFrame>(std::move(frame));
  }

  Status Acknowledge(const FramePosition& position) override {
    kafka::PartitionList offsets(1);
    // Kafka commits the next offset to read.
    offsets.Add(config_.topic, position.lane, position.offset + 1);
    kafka::ErrorCode err = kafka::ErrorCode::kNoError;
    for (int attempt = 0; attempt < 5; ++attempt) {
      err = consumer_->Commit(offsets);
      if (err == kafka::ErrorCode::kNoError) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
    }
    if (err != kafka::ErrorCode::kNoError) {
      // Not fatal: the rows are durable and their cursor recorded, so a restart that reads these
      // frames again skips them as already delivered. The next commit covers them.
      spdlog::warn("Queue: cannot commit Kafka offset {} of partition {} for group {}: {}",
                   position.offset + 1, position.lane, config_.group_id, kafka::ErrorText(err));
    }
    return Status::Ok();
  }

  uint64_t session() const override { return 0; }

 private:
  static constexpr int kMetadataAttempts = 20;

  // The partitions the brokers' metadata lists for the topic; empty while it lists none, or
  // the topic with an error (not known yet).
  Result<std::vector<int32_t>> PartitionIds() {
    auto metadata = consumer_->Metadata(config_.topic, std::chrono::milliseconds(10'000));
    if (!metadata) {
      return Fail(KafkaError(fmt::format("cannot read the partitions of topic {}: {}",
                                         config_.topic, kafka::ErrorText(metadata.error()))));
    }
    for (const kafka::TopicMetadata& listed : *metadata) {
      if (listed.error == kafka::ErrorCode::kNoError && listed.name == config_.topic) {
        return listed.partitions;
      }
    }
    return std::vector<int32_t>();
  }

  std::unique_ptr<kafka::Consumer> consumer_;
  KafkaQueueConfig config_;
};

Status CommonSettings(kafka::ClientConfig& conf, const KafkaQueueConfig& config) {
  if (config.bootstrap_servers.empty()) {
    return KafkaError("bootstrap_server is empty", StatusCode::kInvalidArgument);
  }
  BIZON_RETURN_IF_ERROR(Set(conf, "bootstrap.servers", config.bootstrap_servers));
  BIZON_RETURN_IF_ERROR(Set(conf, "client.id", "bizon"));
  for (const auto& [key, value] : config.client_settings) {
    if (IsReservedSetting(key)) {
      return KafkaError(fmt::format("queue.client_config.{}: bizon sets this itself", key),
                        StatusCode::kInvalidArgument);
    }
    // The SASL pair may come from queue.authentication as well: named without a path.
    bool credential = key == "sasl.username" || key == "sasl.password";
    std::string path = credential ? "" : fmt::format("queue.client_config.{}", key);
    BIZON_RETURN_IF_ERROR(Set(conf, key, value, path));
  }
  LastClientError().Clear();
  return Status::Ok();
}
}  // namespace

Result<std::unique_ptr<BrokerSender>> OpenKafkaSender(const KafkaQueueConfig& config) {
  kafka::ClientConfig conf;
  BIZON_RETURN_IF_ERROR(CommonSettings(conf, config));
  BIZON_RETURN_IF_ERROR(Set(conf, "enable.idempotence", "true"));
  BIZON_RETURN_IF_ERROR(Set(conf, "acks", "all"));
  BIZON_RETURN_IF_ERROR(Set(conf, "linger.ms", "2"));
  BIZON_RETURN_IF_ERROR(
      Set(conf, "message.timeout.ms", std::to_string(config.delivery_timeout_ms)));
  // The producer's request limit must hold one whole frame.
  BIZON_RETURN_IF_ERROR(Set(conf, "message.max.bytes",
                            std::to_string(std::max<int64_t>(
                                1'000'000, config.max_message_bytes + kRecordOverhead * 4))));
  // Bounds what the client holds in flight; Send() waits for its frames anyway.
  BIZON_RETURN_IF_ERROR(Set(conf, "queue.buffering.max.kbytes", "262144"));
  auto producer = kafka::Producer::Open(std::move(conf), QueueClientEvents::Get(), OnDelivery);
  if (!producer) {
    return Fail(KafkaError(fmt::format("cannot start a client: {}", producer.error().message())));
  }
  BIZON_RETURN_IF_ERROR(EnsureTopic(**producer, config));
  return std::unique_ptr<BrokerSender>(new KafkaSender(std::move(*producer), config));
}

Result<std::unique_ptr<BrokerReceiver>> OpenKafkaReceiver(const KafkaQueueConfig& config) {
  kafka::ClientConfig conf;
  BIZON_RETURN_IF_ERROR(CommonSettings(conf, config));
  BIZON_RETURN_IF_ERROR(Set(conf, "group.id", config.group_id));
  // Offsets are committed by bizon once the destination holds the rows, never on a timer.
  BIZON_RETURN_IF_ERROR(Set(conf, "enable.auto.commit", "false"));
  BIZON_RETURN_IF_ERROR(Set(conf, "enable.auto.offset.store", "false"));
  BIZON_RETURN_IF_ERROR(Set(conf, "auto.offset.reset", config.auto_offset_reset));
  BIZON_RETURN_IF_ERROR(
      Set(conf, "queued.max.messages.kbytes",
          std::to_string(std::max<int64_t>(1024, config.consumer_prefetch_bytes / 1024))));
  std::string fetch =
      std::to_string(std::max<int64_t>(1'048'576, config.max_message_bytes + kRecordOverhead * 4));
  BIZON_RETURN_IF_ERROR(Set(conf, "max.partition.fetch.bytes", fetch));
  BIZON_RETURN_IF_ERROR(
      Set(conf, "fetch.max.bytes",
          std::to_string(std::max<int64_t>(52'428'800, config.max_message_bytes * 2))));
  auto consumer =
      kafka::Consumer::Open(std::move(conf), QueueClientEvents::Get(), /*subscribe=*/false);
  if (!consumer) {
    return Fail(KafkaError(fmt::format("cannot start a client: {}", consumer.error().message())));
  }
  BIZON_RETURN_IF_ERROR(EnsureTopic(**consumer, config));
  auto receiver = std::make_unique<KafkaReceiver>(std::move(*consumer), config);
  BIZON_RETURN_IF_ERROR(receiver->Assign());
  return std::unique_ptr<BrokerReceiver>(std::move(receiver));
}

}  // namespace bizon
