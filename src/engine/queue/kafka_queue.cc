#include "engine/queue/kafka_queue.h"

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "bizon/secret_mask.h"
#include "kafka/kafka_security.h"

namespace bizon {
namespace {

// Room for Kafka's own record and batch overhead beside a frame.
constexpr int64_t kRecordOverhead = 1024;

Status KafkaError(std::string what, StatusCode code = StatusCode::kUnavailable) {
  return Status(code, "kafka queue: " + std::move(what), FailureClass::kQueue);
}

struct KafkaHandleDeleter {
  void operator()(rd_kafka_t* handle) const { rd_kafka_destroy(handle); }
};
using KafkaHandle = std::unique_ptr<rd_kafka_t, KafkaHandleDeleter>;

/// One per process: a client's callbacks may still run while its handle is destroyed.
kafka::LastClientError& LastClientError() {
  static auto* last = new kafka::LastClientError();
  return *last;
}

void RecordError(rd_kafka_t*, int error, const char* reason, void*) {
  LastClientError().OnError(error, SecretMask::Global().Redact(reason != nullptr ? reason : ""));
}

void ForwardLog(const rd_kafka_t*, int level, const char* facility, const char* text) {
  // librdkafka logs every lost connection; a broker restart is expected and retried, so these
  // stay at debug unless they are errors it could not recover from.
  std::string line = SecretMask::Global().Redact(text);
  LastClientError().OnLog(facility, line);
  if (level <= 3) {
    spdlog::warn("kafka {}: {}", facility, line);
  } else {
    spdlog::debug("kafka {}: {}", facility, line);
  }
}

/// Runs the error callbacks of the events waiting in the client's queue (they run only when
/// served). Called before anything is assigned or produced, so no message is dropped.
void ServeErrorEvents(rd_kafka_t* handle) {
  if (rd_kafka_type(handle) == RD_KAFKA_PRODUCER) {
    rd_kafka_poll(handle, 0);
    return;
  }
  for (int served = 0; served < 100; ++served) {
    rd_kafka_message_t* event = rd_kafka_consumer_poll(handle, 0);
    if (event == nullptr) break;
    rd_kafka_message_destroy(event);
  }
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

class Conf {
 public:
  Conf() : conf_(rd_kafka_conf_new()) {
    rd_kafka_conf_set_log_cb(conf_, ForwardLog);
    rd_kafka_conf_set_error_cb(conf_, RecordError);
  }
  ~Conf() {
    if (conf_ != nullptr) rd_kafka_conf_destroy(conf_);
  }
  Conf(const Conf&) = delete;
  Conf& operator=(const Conf&) = delete;

  Status Set(const std::string& name, const std::string& value) {
    char error[512];
    if (rd_kafka_conf_set(conf_, name.c_str(), value.c_str(), error, sizeof(error)) !=
        RD_KAFKA_CONF_OK) {
      return KafkaError(
          SecretMask::Global().Redact(fmt::format("invalid setting {}: {}", name, error)),
          StatusCode::kInvalidArgument);
    }
    return Status::Ok();
  }
  rd_kafka_conf_t* get() { return conf_; }
  /// rd_kafka_new takes ownership on success.
  Result<KafkaHandle> Open(rd_kafka_type_t type) {
    char error[512];
    rd_kafka_t* handle = rd_kafka_new(type, conf_, error, sizeof(error));
    if (handle == nullptr) return Fail(KafkaError(fmt::format("cannot start a client: {}", error)));
    conf_ = nullptr;
    return KafkaHandle(handle);
  }

 private:
  rd_kafka_conf_t* conf_;
};

/// Creates the topic when it does not exist: one partition (bizon keeps a job's frames in
/// order), the broker's replication factor, and room for the configured frame size.
Status EnsureTopic(rd_kafka_t* handle, const KafkaQueueConfig& config) {
  const rd_kafka_metadata_t* metadata = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(handle, 1, nullptr, &metadata, 10'000);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    ServeErrorEvents(handle);
    return KafkaError(fmt::format("cannot reach the brokers at {}: {}{}", config.bootstrap_servers,
                                  rd_kafka_err2str(err),
                                  kafka::ConnectionHint(LastClientError().Get())));
  }
  bool exists = false;
  for (int i = 0; i < metadata->topic_cnt; ++i) {
    exists |= config.topic == metadata->topics[i].topic &&
              metadata->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR;
  }
  rd_kafka_metadata_destroy(metadata);
  if (exists) return Status::Ok();

  char error[512];
  rd_kafka_NewTopic_t* topic =
      rd_kafka_NewTopic_new(config.topic.c_str(), 1, -1, error, sizeof(error));
  if (topic == nullptr) return KafkaError(fmt::format("cannot describe topic: {}", error));
  std::string max_bytes = std::to_string(config.max_message_bytes + kRecordOverhead);
  rd_kafka_NewTopic_set_config(topic, "max.message.bytes", max_bytes.c_str());
  rd_kafka_queue_t* queue = rd_kafka_queue_new(handle);
  rd_kafka_CreateTopics(handle, &topic, 1, nullptr, queue);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 30'000);
  Status status = Status::Ok();
  if (event == nullptr) {
    status = KafkaError(fmt::format("creating topic {} timed out", config.topic));
  } else if (const rd_kafka_CreateTopics_result_t* result =
                 rd_kafka_event_CreateTopics_result(event);
             result != nullptr) {
    size_t count = 0;
    const rd_kafka_topic_result_t** topics = rd_kafka_CreateTopics_result_topics(result, &count);
    for (size_t i = 0; i < count; ++i) {
      rd_kafka_resp_err_t topic_err = rd_kafka_topic_result_error(topics[i]);
      if (topic_err != RD_KAFKA_RESP_ERR_NO_ERROR &&
          topic_err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        const char* text = rd_kafka_topic_result_error_string(topics[i]);
        status = KafkaError(fmt::format("cannot create topic {}: {}", config.topic,
                                        text != nullptr ? text : rd_kafka_err2str(topic_err)));
      }
    }
  } else if (rd_kafka_event_error(event) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    status = KafkaError(fmt::format("cannot create topic {}: {}", config.topic,
                                    rd_kafka_event_error_string(event)));
  }
  if (event != nullptr) rd_kafka_event_destroy(event);
  rd_kafka_queue_destroy(queue);
  rd_kafka_NewTopic_destroy(topic);
  if (status.ok()) spdlog::info("Queue: created Kafka topic {}", config.topic);
  return status;
}

// What the delivery reports of one Send() fill in.
struct DeliveryBatch {
  size_t pending = 0;
  rd_kafka_resp_err_t first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
};

void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* message, void*) {
  auto* batch = static_cast<DeliveryBatch*>(message->_private);
  if (batch == nullptr) return;
  if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR && batch->first_error == 0) {
    batch->first_error = message->err;
  }
  --batch->pending;
}

class KafkaSender final : public BrokerSender {
 public:
  KafkaSender(KafkaHandle handle, KafkaQueueConfig config)
      : handle_(std::move(handle)),
        config_(std::move(config)),
        topic_(rd_kafka_topic_new(handle_.get(), config_.topic.c_str(), nullptr)) {}
  ~KafkaSender() override {
    // Everything Send() published was acknowledged already; nothing is left to flush.
    rd_kafka_flush(handle_.get(), 1000);
    rd_kafka_topic_destroy(topic_);
  }
  KafkaSender(const KafkaSender&) = delete;
  KafkaSender& operator=(const KafkaSender&) = delete;

  Status Send(std::string_view key, const std::vector<std::string>& frames) override {
    DeliveryBatch batch;
    for (const std::string& frame : frames) {
      while (true) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (rd_kafka_produce(topic_, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY,
                             const_cast<char*>(frame.data()), frame.size(), key.data(), key.size(),
                             &batch) != 0) {
          err = rd_kafka_last_error();
        }
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          ++batch.pending;
          break;
        }
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
          WaitFor(batch);  // The batch's reports must arrive before it goes out of scope.
          return KafkaError(
              fmt::format("cannot publish to topic {}: {}", config_.topic, rd_kafka_err2str(err)));
        }
        rd_kafka_poll(handle_.get(), 50);  // The local queue is full: let deliveries drain.
      }
    }
    WaitFor(batch);
    if (batch.first_error != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return KafkaError(fmt::format("the brokers did not acknowledge a message on topic {}: {}",
                                    config_.topic, rd_kafka_err2str(batch.first_error)));
    }
    return Status::Ok();
  }

  size_t max_frame_bytes() const override { return static_cast<size_t>(config_.max_message_bytes); }

 private:
  // Delivery reports come within message.timeout.ms, success or failure, so this ends.
  void WaitFor(DeliveryBatch& batch) {
    while (batch.pending > 0) rd_kafka_poll(handle_.get(), 100);
  }

  KafkaHandle handle_;
  KafkaQueueConfig config_;
  rd_kafka_topic_t* topic_;
};

class KafkaReceiver final : public BrokerReceiver {
 public:
  KafkaReceiver(KafkaHandle handle, KafkaQueueConfig config)
      : handle_(std::move(handle)), config_(std::move(config)) {}
  ~KafkaReceiver() override { rd_kafka_consumer_close(handle_.get()); }

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
    rd_kafka_topic_partition_list_t* partitions =
        rd_kafka_topic_partition_list_new(static_cast<int>(ids.size()));
    for (int32_t id : ids) {
      rd_kafka_topic_partition_list_add(partitions, config_.topic.c_str(), id)->offset =
          RD_KAFKA_OFFSET_STORED;  // The group's committed offset, else the reset rule.
    }
    rd_kafka_resp_err_t err = rd_kafka_assign(handle_.get(), partitions);
    rd_kafka_topic_partition_list_destroy(partitions);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return KafkaError(
          fmt::format("cannot read topic {}: {}", config_.topic, rd_kafka_err2str(err)));
    }
    spdlog::info("Queue: reading Kafka topic {} ({} partitions) as group {}", config_.topic,
                 ids.size(), config_.group_id);
    return Status::Ok();
  }

  Result<std::optional<ReceivedFrame>> Receive(std::chrono::milliseconds timeout) override {
    rd_kafka_message_t* message =
        rd_kafka_consumer_poll(handle_.get(), static_cast<int>(timeout.count()));
    if (message == nullptr) return std::optional<ReceivedFrame>();
    std::unique_ptr<rd_kafka_message_t, decltype(&rd_kafka_message_destroy)> owned(
        message, rd_kafka_message_destroy);
    if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      char reason[512];
      if (rd_kafka_fatal_error(handle_.get(), reason, sizeof(reason)) !=
          RD_KAFKA_RESP_ERR_NO_ERROR) {
        return Fail(KafkaError(fmt::format("the consumer failed: {}", reason)));
      }
      if (message->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
          message->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
        return Fail(KafkaError(fmt::format("topic {} does not exist", config_.topic),
                               StatusCode::kNotFound));
      }
      // Transient (a broker restarting): librdkafka reconnects and fetching resumes.
      spdlog::debug("kafka consumer: {}", rd_kafka_message_errstr(message));
      return std::optional<ReceivedFrame>();
    }
    ReceivedFrame frame{
        .bytes = std::string(static_cast<const char*>(message->payload), message->len),
        .position = {.lane = message->partition, .offset = message->offset}};
    return std::optional<ReceivedFrame>(std::move(frame));
  }

  Status Acknowledge(const FramePosition& position) override {
    rd_kafka_topic_partition_list_t* offsets = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(offsets, config_.topic.c_str(), position.lane)->offset =
        position.offset + 1;  // Kafka commits the next offset to read.
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    for (int attempt = 0; attempt < 5; ++attempt) {
      err = rd_kafka_commit(handle_.get(), offsets, 0);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
    }
    rd_kafka_topic_partition_list_destroy(offsets);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      // Not fatal: the rows are durable and their cursor recorded, so a restart that reads these
      // frames again skips them as already delivered. The next commit covers them.
      spdlog::warn("Queue: cannot commit Kafka offset {} of partition {} for group {}: {}",
                   position.offset + 1, position.lane, config_.group_id, rd_kafka_err2str(err));
    }
    return Status::Ok();
  }

  uint64_t session() const override { return 0; }

 private:
  static constexpr int kMetadataAttempts = 20;

  // The partitions the brokers' metadata lists for the topic; empty while it lists none, or
  // the topic with an error (not known yet).
  Result<std::vector<int32_t>> PartitionIds() {
    const rd_kafka_metadata_t* metadata = nullptr;
    rd_kafka_topic_t* topic = rd_kafka_topic_new(handle_.get(), config_.topic.c_str(), nullptr);
    rd_kafka_resp_err_t err = rd_kafka_metadata(handle_.get(), 0, topic, &metadata, 10'000);
    rd_kafka_topic_destroy(topic);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Fail(KafkaError(fmt::format("cannot read the partitions of topic {}: {}",
                                         config_.topic, rd_kafka_err2str(err))));
    }
    std::vector<int32_t> ids;
    for (int i = 0; i < metadata->topic_cnt; ++i) {
      const rd_kafka_metadata_topic_t& listed = metadata->topics[i];
      if (listed.err != RD_KAFKA_RESP_ERR_NO_ERROR || config_.topic != listed.topic) continue;
      for (int p = 0; p < listed.partition_cnt; ++p) ids.push_back(listed.partitions[p].id);
    }
    rd_kafka_metadata_destroy(metadata);
    return ids;
  }

  KafkaHandle handle_;
  KafkaQueueConfig config_;
};

Status CommonSettings(Conf& conf, const KafkaQueueConfig& config) {
  if (config.bootstrap_servers.empty()) {
    return KafkaError("bootstrap_server is empty", StatusCode::kInvalidArgument);
  }
  BIZON_RETURN_IF_ERROR(conf.Set("bootstrap.servers", config.bootstrap_servers));
  BIZON_RETURN_IF_ERROR(conf.Set("client.id", "bizon"));
  for (const auto& [key, value] : config.client_settings) {
    if (IsReservedSetting(key)) {
      return KafkaError(fmt::format("queue.client_config.{}: bizon sets this itself", key),
                        StatusCode::kInvalidArgument);
    }
    BIZON_RETURN_IF_ERROR(conf.Set(key, value));
  }
  LastClientError().Clear();
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<BrokerSender>> OpenKafkaSender(const KafkaQueueConfig& config) {
  Conf conf;
  BIZON_RETURN_IF_ERROR(CommonSettings(conf, config));
  BIZON_RETURN_IF_ERROR(conf.Set("enable.idempotence", "true"));
  BIZON_RETURN_IF_ERROR(conf.Set("acks", "all"));
  BIZON_RETURN_IF_ERROR(conf.Set("linger.ms", "2"));
  BIZON_RETURN_IF_ERROR(conf.Set("message.timeout.ms", std::to_string(config.delivery_timeout_ms)));
  // The producer's request limit must hold one whole frame.
  BIZON_RETURN_IF_ERROR(conf.Set("message.max.bytes",
                                 std::to_string(std::max<int64_t>(
                                     1'000'000, config.max_message_bytes + kRecordOverhead * 4))));
  // Bounds what the client holds in flight; Send() waits for its frames anyway.
  BIZON_RETURN_IF_ERROR(conf.Set("queue.buffering.max.kbytes", "262144"));
  rd_kafka_conf_set_dr_msg_cb(conf.get(), OnDelivery);
  BIZON_ASSIGN_OR_RETURN(KafkaHandle handle, conf.Open(RD_KAFKA_PRODUCER));
  BIZON_RETURN_IF_ERROR(EnsureTopic(handle.get(), config));
  return std::unique_ptr<BrokerSender>(new KafkaSender(std::move(handle), config));
}

Result<std::unique_ptr<BrokerReceiver>> OpenKafkaReceiver(const KafkaQueueConfig& config) {
  Conf conf;
  BIZON_RETURN_IF_ERROR(CommonSettings(conf, config));
  BIZON_RETURN_IF_ERROR(conf.Set("group.id", config.group_id));
  // Offsets are committed by bizon once the destination holds the rows, never on a timer.
  BIZON_RETURN_IF_ERROR(conf.Set("enable.auto.commit", "false"));
  BIZON_RETURN_IF_ERROR(conf.Set("enable.auto.offset.store", "false"));
  BIZON_RETURN_IF_ERROR(conf.Set("auto.offset.reset", config.auto_offset_reset));
  BIZON_RETURN_IF_ERROR(
      conf.Set("queued.max.messages.kbytes",
               std::to_string(std::max<int64_t>(1024, config.consumer_prefetch_bytes / 1024))));
  std::string fetch =
      std::to_string(std::max<int64_t>(1'048'576, config.max_message_bytes + kRecordOverhead * 4));
  BIZON_RETURN_IF_ERROR(conf.Set("max.partition.fetch.bytes", fetch));
  BIZON_RETURN_IF_ERROR(
      conf.Set("fetch.max.bytes",
               std::to_string(std::max<int64_t>(52'428'800, config.max_message_bytes * 2))));
  BIZON_ASSIGN_OR_RETURN(KafkaHandle handle, conf.Open(RD_KAFKA_CONSUMER));
  rd_kafka_poll_set_consumer(handle.get());
  BIZON_RETURN_IF_ERROR(EnsureTopic(handle.get(), config));
  auto receiver = std::make_unique<KafkaReceiver>(std::move(handle), config);
  BIZON_RETURN_IF_ERROR(receiver->Assign());
  return std::unique_ptr<BrokerReceiver>(std::move(receiver));
}

}  // namespace bizon
