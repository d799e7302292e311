#include "kafka/client.h"

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

#include <cstring>

#include "bizon/secret_mask.h"

namespace bizon::kafka {

/// librdkafka's callbacks, each handed the Client as its opaque.
struct ClientCallbacks {
  static Client& Of(void* opaque) { return *static_cast<Client*>(opaque); }

  static void Error(rd_kafka_t*, int error, const char* reason, void* opaque) {
    Of(opaque).events_.OnError(static_cast<ErrorCode>(error),
                               SecretMask::Global().Redact(reason != nullptr ? reason : ""));
  }

  static void Log(const rd_kafka_t* handle, int level, const char* facility, const char* text) {
    void* opaque = rd_kafka_opaque(handle);
    if (opaque == nullptr) return;
    Of(opaque).events_.OnLog(level, facility, SecretMask::Global().Redact(text));
  }

  static void Rebalance(rd_kafka_t*, rd_kafka_resp_err_t reason,
                        rd_kafka_topic_partition_list_t* partitions, void* opaque) {
    PartitionList borrowed = PartitionList::Borrow(partitions);
    static_cast<Consumer&>(Of(opaque)).Rebalance(static_cast<ErrorCode>(reason), borrowed);
  }

  static void Delivery(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque) {
    Client& client = Of(opaque);
    if (client.delivery_report_ != nullptr) {
      client.delivery_report_(message->_private, static_cast<ErrorCode>(message->err));
    }
  }
};

Client::~Client() {
  if (handle_ != nullptr) rd_kafka_destroy(handle_);
}

Status Client::Start(ClientConfig config, Kind kind, DeliveryReport report) {
  rd_kafka_conf_t* conf = config.Release();
  rd_kafka_conf_set_opaque(conf, this);
  rd_kafka_conf_set_error_cb(conf, ClientCallbacks::Error);
  rd_kafka_conf_set_log_cb(conf, ClientCallbacks::Log);
  if (kind == Kind::kSubscribedConsumer) {
    rd_kafka_conf_set_rebalance_cb(conf, ClientCallbacks::Rebalance);
  }
  if (kind == Kind::kProducer) {
    delivery_report_ = report;
    rd_kafka_conf_set_dr_msg_cb(conf, ClientCallbacks::Delivery);
  }
  char error[512] = {};
  rd_kafka_type_t type = kind == Kind::kProducer ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER;
  handle_ = rd_kafka_new(type, conf, error, sizeof(error));
  if (handle_ == nullptr) {
    rd_kafka_conf_destroy(conf);  // rd_kafka_new takes it only on success.
    return InvalidArgumentError(SecretMask::Global().Redact(error));
  }
  if (kind != Kind::kProducer) rd_kafka_poll_set_consumer(handle_);
  return Status::Ok();
}

std::expected<std::vector<TopicMetadata>, ErrorCode> Client::Metadata(
    std::string_view only_topic, std::chrono::milliseconds timeout) {
  rd_kafka_topic_t* topic = nullptr;
  if (!only_topic.empty()) {
    topic = rd_kafka_topic_new(handle_, std::string(only_topic).c_str(), nullptr);
  }
  const rd_kafka_metadata_t* metadata = nullptr;
  rd_kafka_resp_err_t error = rd_kafka_metadata(handle_, topic == nullptr ? 1 : 0, topic, &metadata,
                                                static_cast<int>(timeout.count()));
  if (topic != nullptr) rd_kafka_topic_destroy(topic);
  if (error != RD_KAFKA_RESP_ERR_NO_ERROR) return std::unexpected(static_cast<ErrorCode>(error));
  std::vector<TopicMetadata> topics;
  topics.reserve(static_cast<size_t>(metadata->topic_cnt));
  for (int i = 0; i < metadata->topic_cnt; ++i) {
    const rd_kafka_metadata_topic_t& listed = metadata->topics[i];
    TopicMetadata& entry = topics.emplace_back();
    entry.name = listed.topic;
    entry.error = static_cast<ErrorCode>(listed.err);
    for (int p = 0; p < listed.partition_cnt; ++p) {
      entry.partitions.push_back(listed.partitions[p].id);
    }
  }
  rd_kafka_metadata_destroy(metadata);
  return topics;
}

namespace {

/// The error of a CreateTopics result event (or of the request itself); OK when it created
/// the topic or found it there.
Status CreateTopicsOutcome(rd_kafka_event_t* event, const std::string& name) {
  if (event == nullptr) return UnavailableError(fmt::format("creating topic {} timed out", name));
  const rd_kafka_CreateTopics_result_t* result = rd_kafka_event_CreateTopics_result(event);
  if (result == nullptr) {
    if (rd_kafka_event_error(event) == RD_KAFKA_RESP_ERR_NO_ERROR) return Status::Ok();
    return UnavailableError(
        fmt::format("cannot create topic {}: {}", name, rd_kafka_event_error_string(event)));
  }
  size_t count = 0;
  const rd_kafka_topic_result_t** topics = rd_kafka_CreateTopics_result_topics(result, &count);
  Status status = Status::Ok();
  for (size_t i = 0; i < count; ++i) {
    rd_kafka_resp_err_t error = rd_kafka_topic_result_error(topics[i]);
    if (error == RD_KAFKA_RESP_ERR_NO_ERROR || error == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
      continue;
    }
    const char* text = rd_kafka_topic_result_error_string(topics[i]);
    status = UnavailableError(fmt::format("cannot create topic {}: {}", name,
                                          text != nullptr ? text : rd_kafka_err2str(error)));
  }
  return status;
}

}  // namespace

Status Client::CreateTopic(const std::string& topic, int partitions,
                           const std::vector<std::pair<std::string, std::string>>& settings,
                           std::chrono::milliseconds timeout) {
  char error[512] = {};
  rd_kafka_NewTopic_t* request =
      rd_kafka_NewTopic_new(topic.c_str(), partitions, -1, error, sizeof(error));
  if (request == nullptr) return UnavailableError(fmt::format("cannot describe topic: {}", error));
  for (const auto& [name, value] : settings) {
    if (rd_kafka_NewTopic_set_config(request, name.c_str(), value.c_str()) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_NewTopic_destroy(request);
      return InvalidArgumentError(fmt::format("topic {}: invalid topic setting {}", topic, name));
    }
  }
  rd_kafka_queue_t* queue = rd_kafka_queue_new(handle_);
  rd_kafka_CreateTopics(handle_, &request, 1, nullptr, queue);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue, static_cast<int>(timeout.count()));
  Status status = CreateTopicsOutcome(event, topic);
  if (event != nullptr) rd_kafka_event_destroy(event);
  rd_kafka_queue_destroy(queue);
  rd_kafka_NewTopic_destroy(request);
  return status;
}

FatalError Client::fatal_error() const {
  char reason[512] = {};
  rd_kafka_resp_err_t code = rd_kafka_fatal_error(handle_, reason, sizeof(reason));
  if (code == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  return {.code = static_cast<ErrorCode>(code), .reason = SecretMask::Global().Redact(reason)};
}

// --- Consumer ----------------------------------------------------------------------------------

Result<std::unique_ptr<Consumer>> Consumer::Open(ClientConfig config, ClientEvents& events,
                                                 bool subscribe) {
  std::unique_ptr<Consumer> consumer(new Consumer(events));
  BIZON_RETURN_IF_ERROR(
      consumer->Start(std::move(config), subscribe ? Kind::kSubscribedConsumer : Kind::kConsumer));
  return consumer;
}

Consumer::~Consumer() { Close(); }

ErrorCode Consumer::Close() {
  if (closed_ || handle_ == nullptr) return ErrorCode::kNoError;
  closed_ = true;
  return static_cast<ErrorCode>(rd_kafka_consumer_close(handle_));
}

void Consumer::ServeEvents() {
  for (int served = 0; served < 100; ++served) {
    if (!Poll(std::chrono::milliseconds(0))) break;
  }
}

Message Consumer::Poll(std::chrono::milliseconds timeout) {
  return Message(rd_kafka_consumer_poll(handle_, static_cast<int>(timeout.count())));
}

Message Consumer::PollUntil(std::chrono::steady_clock::time_point deadline) {
  while (true) {
    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (remaining.count() <= 0) return Message();
    if (Message message = Poll(remaining)) return message;
  }
}

void Consumer::PollBatch(std::chrono::steady_clock::time_point deadline, size_t max,
                         std::vector<Message>& out) {
  out.clear();
  thread_local std::vector<rd_kafka_message_t*> raw;
  raw.resize(max);
  rd_kafka_queue_t* queue = rd_kafka_queue_get_consumer(handle_);
  ssize_t got = queue != nullptr ? rd_kafka_consume_batch_queue(queue, 0, raw.data(), max) : 0;
  if (queue != nullptr) rd_kafka_queue_destroy(queue);
  for (ssize_t i = 0; i < got; ++i) out.emplace_back(raw[static_cast<size_t>(i)]);
  if (out.empty()) {
    if (Message message = PollUntil(deadline)) out.push_back(std::move(message));
  }
}

ErrorCode Consumer::Subscribe(const std::vector<std::string>& topics) {
  PartitionList list(static_cast<int>(topics.size()));
  for (const std::string& topic : topics) list.Add(topic, RD_KAFKA_PARTITION_UA, kOffsetInvalid);
  return static_cast<ErrorCode>(rd_kafka_subscribe(handle_, list.get()));
}

ErrorCode Consumer::Assign(const PartitionList& partitions) {
  return static_cast<ErrorCode>(rd_kafka_assign(handle_, partitions.get()));
}

ErrorCode Consumer::Commit(const PartitionList& offsets) {
  return static_cast<ErrorCode>(rd_kafka_commit(handle_, offsets.get(), /*async=*/0));
}

ErrorCode Consumer::Committed(PartitionList& partitions, std::chrono::milliseconds timeout) {
  return static_cast<ErrorCode>(
      rd_kafka_committed(handle_, partitions.get(), static_cast<int>(timeout.count())));
}

void Consumer::Pause(std::string_view topic, int32_t partition) {
  PartitionList list(1);
  list.Add(topic, partition, kOffsetInvalid);
  rd_kafka_pause_partitions(handle_, list.get());
}

std::expected<Consumer::Watermarks, ErrorCode> Consumer::QueryWatermarks(
    const std::string& topic, int32_t partition, std::chrono::milliseconds timeout) {
  Watermarks marks;
  rd_kafka_resp_err_t error =
      rd_kafka_query_watermark_offsets(handle_, topic.c_str(), partition, &marks.low, &marks.high,
                                       static_cast<int>(timeout.count()));
  if (error != RD_KAFKA_RESP_ERR_NO_ERROR) return std::unexpected(static_cast<ErrorCode>(error));
  return marks;
}

std::string Consumer::MemberId() const {
  char* member = rd_kafka_memberid(handle_);
  if (member == nullptr) return "";
  std::string id = member;
  rd_kafka_mem_free(handle_, member);
  return id;
}

void Consumer::Rebalance(ErrorCode reason, PartitionList& partitions) {
  bool cooperative = std::strcmp(rd_kafka_rebalance_protocol(handle_), "COOPERATIVE") == 0;
  if (reason == ErrorCode::kAssignPartitions) {
    if (!events_.OnRebalance(/*assigned=*/true, reason, partitions)) return;
    if (cooperative) {
      if (rd_kafka_error_t* error = rd_kafka_incremental_assign(handle_, partitions.get())) {
        spdlog::error("Kafka assignment failed: {}", rd_kafka_error_string(error));
        rd_kafka_error_destroy(error);
      }
    } else if (rd_kafka_resp_err_t error = rd_kafka_assign(handle_, partitions.get()); error) {
      spdlog::error("Kafka assignment failed: {}", rd_kafka_err2str(error));
    }
    return;
  }
  events_.OnRebalance(/*assigned=*/false, reason, partitions);
  if (cooperative) {
    if (rd_kafka_error_t* error = rd_kafka_incremental_unassign(handle_, partitions.get())) {
      rd_kafka_error_destroy(error);
    }
  } else {
    rd_kafka_assign(handle_, nullptr);
  }
}

// --- Producer ----------------------------------------------------------------------------------

Result<std::unique_ptr<Producer>> Producer::Open(ClientConfig config, ClientEvents& events,
                                                 DeliveryReport report) {
  std::unique_ptr<Producer> producer(new Producer(events));
  BIZON_RETURN_IF_ERROR(producer->Start(std::move(config), Kind::kProducer, report));
  return producer;
}

void Producer::ServeEvents() { rd_kafka_poll(handle_, 0); }

Producer::~Producer() {
  for (auto& [name, topic] : topics_) rd_kafka_topic_destroy(topic);
}

ErrorCode Producer::Produce(const std::string& topic, std::string_view key, std::string_view value,
                            void* opaque) {
  rd_kafka_topic_t*& handle = topics_[topic];
  if (handle == nullptr) handle = rd_kafka_topic_new(handle_, topic.c_str(), nullptr);
  if (rd_kafka_produce(handle, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY,
                       const_cast<char*>(value.data()), value.size(),
                       key.empty() ? nullptr : key.data(), key.size(), opaque) != 0) {
    return static_cast<ErrorCode>(rd_kafka_last_error());
  }
  return ErrorCode::kNoError;
}

void Producer::Poll(std::chrono::milliseconds timeout) {
  rd_kafka_poll(handle_, static_cast<int>(timeout.count()));
}

ErrorCode Producer::Flush(std::chrono::milliseconds timeout) {
  return static_cast<ErrorCode>(rd_kafka_flush(handle_, static_cast<int>(timeout.count())));
}

}  // namespace bizon::kafka
