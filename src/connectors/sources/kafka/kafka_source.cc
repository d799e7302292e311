#include "connectors/sources/kafka/kafka_source.h"

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "bizon/clock.h"
#include "bizon/secret_mask.h"
#include "connectors/registration.h"
#include "connectors/sources/kafka/kafka_message.h"
#include "http/http_session.h"
#include "kafka/kafka_security.h"

namespace bizon {
namespace kafka {
namespace {

using Clock = std::chrono::steady_clock;

std::string SettingText(const Value& value) {
  if (value.is_bool()) return value.AsBool() ? "true" : "false";
  return value.ToDisplayString();
}

bool HasSetting(const std::vector<std::pair<std::string, std::string>>& settings,
                std::string_view key) {
  for (const auto& [name, value] : settings) {
    if (name == key) return true;
  }
  return false;
}

bool IsSecretSetting(std::string_view key) {
  return key == "sasl.username" || LooksLikeCredentialName(key);
}

void RebalanceCallback(rd_kafka_t* handle, rd_kafka_resp_err_t error,
                       rd_kafka_topic_partition_list_t* partitions, void* opaque) {
  (void)handle;
  static_cast<KafkaSource*>(opaque)->Rebalance(error, partitions);
}

void ErrorCallback(rd_kafka_t* handle, int error, const char* reason, void* opaque) {
  (void)handle;
  static_cast<KafkaSource*>(opaque)->ClientError(error, reason);
}

void LogCallback(const rd_kafka_t* handle, int level, const char* facility, const char* text) {
  if (std::strcmp(facility, "FAIL") == 0) {
    // Kept for the message of a connection that does not come up; not logged, since librdkafka
    // retries and a broker restart is expected.
    if (void* source = rd_kafka_opaque(handle); source != nullptr) {
      static_cast<KafkaSource*>(source)->ClientLog(facility, SecretMask::Global().Redact(text));
    }
    return;
  }
  std::string line = SecretMask::Global().Redact(fmt::format("librdkafka {}: {}", facility, text));
  if (level <= 3) {
    spdlog::error("{}", line);
  } else if (level == 4) {
    spdlog::warn("{}", line);
  } else {
    spdlog::debug("{}", line);
  }
}

/// Errors a consumer reports while it reconnects or rebalances: librdkafka retries them itself.
bool IsTransient(rd_kafka_resp_err_t error) {
  switch (error) {
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR__RESOLVE:
    case RD_KAFKA_RESP_ERR__MAX_POLL_EXCEEDED:
    case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
    case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
    case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
      return true;
    default:
      return false;
  }
}

struct MessageDeleter {
  void operator()(rd_kafka_message_t* message) const { rd_kafka_message_destroy(message); }
};
using MessagePtr = std::unique_ptr<rd_kafka_message_t, MessageDeleter>;

/// The next message or event, waiting at most until `deadline`; null once it has passed.
MessagePtr PollUntil(rd_kafka_t* consumer, Clock::time_point deadline) {
  while (true) {
    auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (remaining <= 0) return nullptr;
    if (rd_kafka_message_t* message = rd_kafka_consumer_poll(consumer, static_cast<int>(remaining)))
      return MessagePtr(message);
  }
}

/// Up to `max` messages or events into `out`: everything already queued at once (one call into
/// librdkafka for the lot), else the first to arrive before `deadline`. Empty once it passed.
void NextMessages(rd_kafka_t* consumer, Clock::time_point deadline, size_t max,
                  std::vector<MessagePtr>& out) {
  out.clear();
  thread_local std::vector<rd_kafka_message_t*> raw;
  raw.resize(max);
  rd_kafka_queue_t* queue = rd_kafka_queue_get_consumer(consumer);
  ssize_t got = queue != nullptr ? rd_kafka_consume_batch_queue(queue, 0, raw.data(), max) : 0;
  if (queue != nullptr) rd_kafka_queue_destroy(queue);
  for (ssize_t i = 0; i < got; ++i) out.emplace_back(raw[static_cast<size_t>(i)]);
  if (out.empty()) {
    if (MessagePtr message = PollUntil(consumer, deadline)) out.push_back(std::move(message));
  }
}

/// Calls `visit(name, value, size)` for every header of `message`.
template <typename Visitor>
void ForEachHeader(const rd_kafka_message_t& message, Visitor&& visit) {
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(&message, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
  const char* name;
  const void* value;
  size_t size;
  for (size_t i = 0; !rd_kafka_header_get_all(headers, i, &name, &value, &size); ++i) {
    visit(name, value, size);
  }
}

/// Calls `visit(topic-partition, next offset)` for each position in a stream pagination
/// ({"<topic>": {"<partition>": <next offset>}}); skips what has another shape.
template <typename Visit>
void ForEachPosition(const Value& pagination, Visit visit) {
  if (!pagination.is_map()) return;
  for (const auto& [topic, partitions] : pagination.AsMap()) {
    if (!partitions.is_map()) continue;
    for (const auto& [partition, offset] : partitions.AsMap()) {
      if (!offset.is_integer()) continue;
      visit(std::pair<std::string, int32_t>(
                topic, static_cast<int32_t>(std::strtol(partition.c_str(), nullptr, 10))),
            offset.AsInteger());
    }
  }
}

std::string Excerpt(const void* data, size_t size) {
  if (data == nullptr) return "(none)";
  return BodyExcerpt(std::string_view(static_cast<const char*>(data), size), 200);
}

/// queued.max.messages.kbytes unless consumer_config sets it (librdkafka's default: 65536). 1M
/// messages of ~300 B into a file: 4 MiB reads as fast as 16 MiB (1.7-1.8 s) with 77 MiB peak RSS
/// instead of 101-107 MiB; 2 MiB saves little more.
constexpr const char* kDefaultPrefetchKbytes = "4096";

/// Kafka's limit on a group.instance.id (as on a topic name).
constexpr size_t kMaxInstanceIdSize = 249;

bool IsInstanceIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

std::string PartitionName(std::string_view topic, int32_t partition) {
  return fmt::format("{}/{}", topic, partition);
}

}  // namespace

std::string HostName() {
  if (const char* exported = std::getenv("HOSTNAME"); exported != nullptr && *exported != '\0') {
    return exported;
  }
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

std::string StaticMemberId(std::string_view pipeline, std::string_view host,
                           std::string_view member) {
  std::string id;
  bool exact = true;
  auto append = [&](std::string_view part) {
    if (!id.empty()) id += '.';
    for (char c : part) {
      exact = exact && IsInstanceIdChar(c);
      id += IsInstanceIdChar(c) ? c : '_';
    }
  };
  append(pipeline.empty() ? std::string_view("bizon") : pipeline);
  append(host);
  if (!member.empty()) append(member);
  if (exact && id.size() <= kMaxInstanceIdSize) return id;
  // Replaced characters or a cut could make two ids equal: a hash of the exact parts keeps
  // them apart (FNV-1a, stable across builds and hosts, unlike std::hash).
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (std::string_view part :
       {pipeline, std::string_view("\0", 1), host, std::string_view("\0", 1), member}) {
    for (char c : part) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 0x100000001b3ULL;
    }
  }
  std::string suffix = fmt::format(".{:016x}", hash);
  if (id.size() > kMaxInstanceIdSize - suffix.size()) id.resize(kMaxInstanceIdSize - suffix.size());
  return id + suffix;
}

namespace {

/// commit_offsets: production commits the group's offsets only under ENVIRONMENT=production, as
/// the original did.
bool CommitsOffsets(std::string_view commit_offsets) {
  if (commit_offsets != "production") return true;
  const char* environment = std::getenv("ENVIRONMENT");
  if (environment != nullptr && std::string_view(environment) == "production") return true;
  spdlog::info(
      "kafka source: commit_offsets is 'production' and ENVIRONMENT is not: the group's offsets "
      "are not committed (the backend's cursor still records progress)");
  return false;
}

std::vector<TopicRoute> TopicsOf(const Value& config) {
  std::vector<TopicRoute> routes;
  if (const Value* topics = config.Find("topics"); topics != nullptr && topics->is_list()) {
    for (const Value& topic : topics->AsList()) {
      routes.push_back(
          {.name = topic.GetString("name"), .destination_id = topic.GetString("destination_id")});
    }
  }
  return routes;
}

}  // namespace

Result<KafkaSourceOptions> ReadKafkaOptions(const SourceContext& context) {
  const Value& config = context.config;
  KafkaSourceOptions options;
  options.sync_mode = context.sync_mode;
  options.topics = TopicsOf(config);
  // Read against the declaration (kafka_spec.cc), which holds every default once.
  OptionReader declared(Option::Object("source", KafkaSourceFields()), config);
  options.group_id = declared.String("group_id");
  options.skip_message_empty_value = declared.Boolean("skip_message_empty_value");
  options.skip_message_invalid_keys = declared.Boolean("skip_message_invalid_keys");
  options.skip_message_on_decode_error = declared.Boolean("skip_message_on_decode_error");
  options.batch_size = declared.Integer("batch_size");
  options.consumer_timeout_s = declared.Integer("consumer_timeout");
  options.avro = declared.String("message_encoding") == "avro";
  options.commit_offsets = CommitsOffsets(declared.String("commit_offsets"));
  BIZON_RETURN_IF_ERROR(declared.status());

  // consumer_config replaces the defaults as a whole (the spec filled them in when absent).
  if (const Value* client = config.Find("consumer_config"); client != nullptr && client->is_map()) {
    for (const auto& [key, value] : client->AsMap()) {
      if (!value.is_string() && !value.is_number() && !value.is_bool()) {
        return Fail(InvalidArgumentError(
            fmt::format("source.consumer_config.{}: expected a string, number or boolean", key)));
      }
      options.client_settings.emplace_back(key, SettingText(value));
      if (IsSecretSetting(key)) SecretMask::Global().Add(options.client_settings.back().second);
    }
  }
  auto set = [&](std::string key, std::string value) {
    for (auto& setting : options.client_settings) {
      if (setting.first == key) {
        setting.second = std::move(value);
        return;
      }
    }
    options.client_settings.emplace_back(std::move(key), std::move(value));
  };
  if (const Value* authentication = config.Find("authentication");
      authentication != nullptr && authentication->is_map()) {
    const Value* params = authentication->Find("params");
    if (params != nullptr && params->is_map()) {
      std::string password = params->GetString("password");
      SecretMask::Global().Add(password);
      // PLAIN as the original, unless consumer_config names another mechanism (SCRAM-SHA-256,
      // SCRAM-SHA-512): the credentials are the same pair.
      if (!HasSetting(options.client_settings, "sasl.mechanisms") &&
          !HasSetting(options.client_settings, "sasl.mechanism")) {
        set("sasl.mechanisms", "PLAIN");
      }
      set("sasl.username", params->GetString("username"));
      set("sasl.password", std::move(password));
    }
    BIZON_ASSIGN_OR_RETURN(options.registry.type, ParseRegistryType(authentication->GetString(
                                                      "schema_registry_type", "apicurio")));
    options.registry.url = authentication->GetString("schema_registry_url");
    options.registry.username = authentication->GetString("schema_registry_username");
    options.registry.password = authentication->GetString("schema_registry_password");
    SecretMask::Global().Add(options.registry.password);
  }
  set("group.id", options.group_id);
  options.bootstrap_servers = config.GetString("bootstrap_servers");
  set("bootstrap.servers", options.bootstrap_servers);
  options.member = config.GetString("member");
  if (!HasSetting(options.client_settings, "group.instance.id") &&
      options.sync_mode == SyncMode::kStream) {
    // Static membership (KIP-345): a restarted process takes its predecessor's place in the
    // group at once, instead of waiting for the dead member's session to expire.
    std::string host = HostName();
    if (host.empty()) {
      spdlog::warn("Kafka static membership is off: the host name is unknown (set HOSTNAME)");
    } else {
      set("group.instance.id", StaticMemberId(context.pipeline_name, host, options.member));
    }
  }
  return options;
}

KafkaSource::KafkaSource(KafkaSourceOptions options) : options_(std::move(options)) {
  for (const TopicRoute& topic : options_.topics) topic_map_[topic.name] = topic.destination_id;
  if (options_.avro) registry_ = std::make_unique<SchemaRegistry>(options_.registry);
}

KafkaSource::~KafkaSource() { DestroyConsumer(); }

Status KafkaSource::CreateConsumer() {
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [key, value] : options_.client_settings) {
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), error, sizeof(error)) !=
        RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return InvalidArgumentError(
          fmt::format("source.consumer_config: librdkafka rejects {}: {}", key, error));
    }
  }
  // End-of-partition events tell a bounded read that a partition is done, and a stream read
  // that it caught up and may return before consumer_timeout.
  if (!HasSetting(options_.client_settings, "enable.partition.eof")) {
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", error, sizeof(error));
  }
  // librdkafka prefetches up to 64 MiB (and 100,000 messages) by default, beside the engine's
  // own queue. 4 MiB, refilled 10 ms after it fills, reads as fast (fetch.queue.backoff.ms, from
  // librdkafka 2.1; before it a full prefetch queue stopped fetching for a whole second).
  if (!HasSetting(options_.client_settings, "queued.max.messages.kbytes") &&
      !HasSetting(options_.client_settings, "fetch.queue.backoff.ms")) {
    rd_kafka_conf_set(conf, "queued.max.messages.kbytes", kDefaultPrefetchKbytes, error,
                      sizeof(error));
    rd_kafka_conf_set(conf, "fetch.queue.backoff.ms", "10", error, sizeof(error));
  }
  rd_kafka_conf_set_opaque(conf, this);
  rd_kafka_conf_set_error_cb(conf, ErrorCallback);
  rd_kafka_conf_set_log_cb(conf, LogCallback);
  if (options_.sync_mode == SyncMode::kStream) {
    rd_kafka_conf_set_rebalance_cb(conf, RebalanceCallback);
  }
  rd_kafka_t* handle = rd_kafka_new(RD_KAFKA_CONSUMER, conf, error, sizeof(error));
  if (handle == nullptr) {
    rd_kafka_conf_destroy(conf);
    return InvalidArgumentError(fmt::format("cannot create the Kafka consumer: {}", error));
  }
  rd_kafka_poll_set_consumer(handle);
  consumer_ = handle;
  return Status::Ok();
}

void KafkaSource::DestroyConsumer() {
  if (consumer_ == nullptr) return;
  if (rd_kafka_resp_err_t closed = rd_kafka_consumer_close(consumer_); closed) {
    spdlog::warn("Error while closing the Kafka consumer: {}", rd_kafka_err2str(closed));
  }
  rd_kafka_destroy(consumer_);
  consumer_ = nullptr;
  subscribed_ = false;
  assigned_.clear();
  at_end_.clear();
}

std::string KafkaSource::FatalErrorText() const {
  char fatal[512] = {};
  rd_kafka_resp_err_t original = rd_kafka_fatal_error(consumer_, fatal, sizeof(fatal));
  std::string text = fmt::format("fatal Kafka client error {}: {}", rd_kafka_err2name(original),
                                 SecretMask::Global().Redact(fatal));
  if (original == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID) {
    // Two live processes derived the same static member id.
    text += fmt::format(
        " (another consumer joined the group with this process's group.instance.id: give each "
        "process of one pipeline on one host its own source.member; id {})",
        InstanceId());
  }
  return text;
}

void KafkaSource::ClientError(int error, const char* reason) {
  auto code = static_cast<rd_kafka_resp_err_t>(error);
  if (code == RD_KAFKA_RESP_ERR__FATAL) {
    std::string text = FatalErrorText();
    std::lock_guard lock(fatal_mutex_);
    fatal_error_ = std::move(text);
    return;
  }
  std::string text = SecretMask::Global().Redact(reason != nullptr ? reason : "");
  spdlog::warn("Kafka client error {}: {}", rd_kafka_err2name(code), text);
  last_client_error_.OnError(error, std::move(text));
}

std::string KafkaSource::InstanceId() const {
  for (const auto& [name, value] : options_.client_settings) {
    if (name == "group.instance.id" && !value.empty()) return value;
  }
  return std::string(kNoInstanceId);
}

Clock::duration KafkaSource::MaxPollInterval() const {
  for (const auto& [name, value] : options_.client_settings) {
    if (name == "max.poll.interval.ms") {
      return std::chrono::milliseconds(std::strtoll(value.c_str(), nullptr, 10));
    }
  }
  return std::chrono::milliseconds(300000);  // librdkafka's default.
}

Status KafkaSource::CheckFatalError() {
  std::lock_guard lock(fatal_mutex_);
  if (fatal_error_.empty()) return Status::Ok();
  return UnavailableError(fatal_error_);
}

Result<std::map<std::string, int>> KafkaSource::FetchPartitionCounts() {
  const rd_kafka_metadata_t* metadata = nullptr;
  rd_kafka_resp_err_t error = rd_kafka_metadata(
      consumer_, 1, nullptr, &metadata, static_cast<int>(options_.consumer_timeout_s * 1000));
  if (error != RD_KAFKA_RESP_ERR_NO_ERROR) {
    // The client's error events (a refused login, a failed handshake) wait in its queue until
    // served: serve them, so the message can name the last one. Nothing is assigned yet, so no
    // message is dropped here.
    for (int served = 0; served < 100; ++served) {
      rd_kafka_message_t* event = rd_kafka_consumer_poll(consumer_, 0);
      if (event == nullptr) break;
      rd_kafka_message_destroy(event);
    }
    std::string last = last_client_error_.Get();
    return Fail(UnavailableError(
        fmt::format("Kafka connection failed: {} (bootstrap servers {}, within {} s){}",
                    rd_kafka_err2str(error), options_.bootstrap_servers,
                    options_.consumer_timeout_s, ConnectionHint(last))));
  }
  std::map<std::string, int> counts;
  for (int i = 0; i < metadata->topic_cnt; ++i) {
    const rd_kafka_metadata_topic_t& topic = metadata->topics[i];
    if (topic.err != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
    counts[topic.topic] = topic.partition_cnt;
  }
  rd_kafka_metadata_destroy(metadata);
  for (const TopicRoute& topic : options_.topics) {
    if (!counts.contains(topic.name)) {
      return Fail(NotFoundError(fmt::format("Topic {} not found", topic.name)));
    }
  }
  return counts;
}

Status KafkaSource::CheckConnection() {
  if (options_.topics.empty()) {
    return FailedPreconditionError(
        "No topics configured. Either provide topics in source config or use streams "
        "configuration: source.topics or streams[].source.topic");
  }
  if (options_.sync_mode != SyncMode::kStream && options_.topics.size() != 1) {
    return InvalidArgumentError(fmt::format(
        "sync_mode {} reads exactly one topic, got {}; use sync_mode: stream for several",
        ToString(options_.sync_mode), options_.topics.size()));
  }
  if (consumer_ == nullptr) BIZON_RETURN_IF_ERROR(CreateConsumer());
  std::string shown;
  for (const auto& [key, value] : options_.client_settings) {
    if (IsSecretSetting(key)) continue;
    shown += fmt::format("{}{}={}", shown.empty() ? "" : ", ", key, value);
  }
  spdlog::info("Kafka consumer config: {}", shown);
  BIZON_ASSIGN_OR_RETURN(auto counts, FetchPartitionCounts());
  (void)counts;
  return Status::Ok();
}

std::optional<int64_t> KafkaSource::TotalRecordsCount() {
  if (consumer_ == nullptr && !CreateConsumer().ok()) return std::nullopt;
  auto counts = FetchPartitionCounts();
  if (!counts) return std::nullopt;
  int64_t total = 0;
  for (const TopicRoute& topic : options_.topics) {
    for (int partition = 0; partition < (*counts)[topic.name]; ++partition) {
      int64_t low = 0;
      int64_t high = 0;
      if (rd_kafka_query_watermark_offsets(consumer_, topic.name.c_str(), partition, &low, &high,
                                           static_cast<int>(options_.consumer_timeout_s * 1000)) !=
          RD_KAFKA_RESP_ERR_NO_ERROR) {
        return std::nullopt;
      }
      total += high;  // As the original: the high watermark, not high - low.
    }
  }
  return total;
}

Result<SourceIteration> KafkaSource::Get(const Value& pagination) {
  if (consumer_ == nullptr) BIZON_RETURN_IF_ERROR(CreateConsumer());
  BIZON_RETURN_IF_ERROR(CheckFatalError());
  Result<SourceIteration> iteration =
      options_.sync_mode == SyncMode::kStream ? GetStream(pagination) : GetBounded(pagination);
  if (iteration && !iteration->records.empty()) {
    last_batch_records_ = iteration->records.size();
    last_batch_bytes_ = iteration->records.PayloadBytes();
  }
  return iteration;
}

Status KafkaSource::HandleMessageError(const rd_kafka_message_t& message) {
  std::string topic = message.rkt != nullptr ? rd_kafka_topic_name(message.rkt) : "";
  if (message.err == RD_KAFKA_RESP_ERR__FATAL) return UnavailableError(FatalErrorText());
  if (IsTransient(message.err)) {
    spdlog::warn("Kafka consumer: {} (topic {} partition {}); retrying",
                 rd_kafka_message_errstr(&message), topic, message.partition);
    return Status::Ok();
  }
  if (message.err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
      message.err == RD_KAFKA_RESP_ERR__MSG_TIMED_OUT) {
    spdlog::error(
        "Kafka message too large on topic {} partition {} offset {}: raise fetch.max.bytes / "
        "max.partition.fetch.bytes in consumer_config",
        topic, message.partition, message.offset);
  }
  return UnavailableError(fmt::format("Kafka consumer error on topic {} partition {}: {}", topic,
                                      message.partition, rd_kafka_message_errstr(&message)));
}

Status KafkaSource::AddMessage(const rd_kafka_message_t& message, RecordBatch& records) {
  std::string_view topic = rd_kafka_topic_name(message.rkt);
  if ((message.payload == nullptr || message.len == 0) && options_.skip_message_empty_value) {
    return Status::Ok();
  }
  RecordParts parts{.topic = topic, .offset = message.offset, .partition = message.partition};
  rd_kafka_timestamp_type_t timestamp_type;
  parts.timestamp_ms = rd_kafka_message_timestamp(&message, &timestamp_type);
  if (parts.timestamp_ms < 0) parts.timestamp_ms = NowMicros() / 1000;

  if (message.key != nullptr && message.key_len > 0) {
    std::string_view key(static_cast<const char*>(message.key), message.key_len);
    auto decoded = DecodeJsonKey(key);
    if (!decoded) {
      if (options_.skip_message_invalid_keys) return Status::Ok();
      spdlog::error(
          "Error while parsing message key: {} (topic {} partition {} offset {}), raw key: {}",
          decoded.error().message(), topic, message.partition, message.offset,
          Excerpt(message.key, message.key_len));
      return decoded.error().WithContext(
          fmt::format("topic {} partition {} offset {}", topic, message.partition, message.offset));
    }
    parts.keys_json = *decoded;
  }

  std::string_view value(static_cast<const char*>(message.payload), message.len);
  Status decoded = Status::Ok();
  std::optional<DecodedJson> json;
  if (options_.avro) {
    value_buffer_.clear();
    auto header = ParseSchemaHeader(value);
    if (!header) {
      decoded = header.error();
    } else if (auto schema = registry_->Get(header->schema_id); !schema) {
      decoded = schema.error();
    } else {
      decoded = (*schema)->decoder.Decode(value.substr(header->length), value_buffer_);
      parts.value_json = value_buffer_;
      parts.schema_json = (*schema)->record_json;
    }
  } else if (auto parsed = DecodeJsonValue(value); !parsed) {
    decoded = parsed.error();
  } else {
    json = std::move(*parsed);
    if (json->replaced_invalid_utf8) {
      spdlog::warn(
          "Message value on topic {} partition {} offset {} is not valid UTF-8: invalid "
          "bytes were replaced by U+FFFD",
          topic, message.partition, message.offset);
    }
    parts.value_json = json->json();
  }
  if (!decoded.ok()) return DecodeFailure(message, topic, decoded);
  AppendRecord(message, parts, records);
  return Status::Ok();
}

Status KafkaSource::DecodeFailure(const rd_kafka_message_t& message, std::string_view topic,
                                  const Status& decoded) const {
  std::string header_names;
  ForEachHeader(message, [&](const char* name, const void*, size_t) {
    header_names += fmt::format("{}{}", header_names.empty() ? "" : ", ", name);
  });
  spdlog::error(
      "Error while decoding message value on topic {} partition {} offset {} ({} bytes, "
      "headers [{}]): {}",
      topic, message.partition, message.offset, message.len, header_names, decoded.message());
  if (options_.skip_message_on_decode_error) return Status::Ok();
  return decoded.WithContext(
      fmt::format("cannot decode the value of topic {} partition {} "
                  "offset {}",
                  topic, message.partition, message.offset));
}

void KafkaSource::AppendRecord(const rd_kafka_message_t& message, RecordParts& parts,
                               RecordBatch& records) {
  ForEachHeader(message, [&](const char* name, const void* header_value, size_t size) {
    parts.headers.emplace_back(name, header_value == nullptr
                                         ? std::nullopt
                                         : std::optional<std::string_view>(std::string_view(
                                               static_cast<const char*>(header_value), size)));
  });
  auto route = topic_map_.find(parts.topic);
  id_buffer_.assign("partition_");
  AppendInteger(id_buffer_, message.partition);
  id_buffer_ += "_offset_";
  AppendInteger(id_buffer_, message.offset);
  AppendRecordJson(records.OpenPayload(), parts);  // Straight into the batch: no copy.
  records.CommitPayload(
      id_buffer_, parts.timestamp_ms * 1000,
      route != topic_map_.end() ? std::string_view(route->second) : std::string_view());
}

// --- stream mode -------------------------------------------------------------------------------

void KafkaSource::Rebalance(int error, rd_kafka_topic_partition_list_t* partitions) {
  bool cooperative = std::strcmp(rd_kafka_rebalance_protocol(consumer_), "COOPERATIVE") == 0;
  if (error == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    std::vector<std::optional<int64_t>> claimed;
    if (owner_ != nullptr) {
      // Shared by several members: the ledger says where the partitions stand, and from now on
      // fences the writes of whoever held them before.
      std::vector<std::string> names;
      names.reserve(static_cast<size_t>(partitions->cnt));
      for (int i = 0; i < partitions->cnt; ++i) {
        names.push_back(PartitionName(partitions->elems[i].topic, partitions->elems[i].partition));
      }
      auto positions = owner_->Claimed(names);
      if (!positions) {
        // Not assigned: the Get in progress fails and the run ends, leaving the group.
        claim_error_ = positions.error();
        return;
      }
      claimed = std::move(*positions);
    }
    std::string shown;
    for (int i = 0; i < partitions->cnt; ++i) {
      rd_kafka_topic_partition_t& partition = partitions->elems[i];
      TopicPartition key{partition.topic, partition.partition};
      if (i < static_cast<int>(claimed.size()) && claimed[static_cast<size_t>(i)]) {
        positions_[key] = *claimed[static_cast<size_t>(i)];
      }
      // The backend's record of progress wins over the group's committed offsets.
      if (auto known = positions_.find(key); known != positions_.end()) {
        partition.offset = known->second;
      }
      assigned_.insert(key);
      at_end_.erase(key);
      shown += fmt::format("{}{}[{}]@{}", shown.empty() ? "" : ", ", partition.topic,
                           partition.partition,
                           partition.offset >= 0 ? std::to_string(partition.offset) : "committed");
    }
    spdlog::info("Kafka partitions assigned: {}", shown);
    rd_kafka_error_t* assign_error = nullptr;
    if (cooperative) {
      assign_error = rd_kafka_incremental_assign(consumer_, partitions);
    } else if (rd_kafka_resp_err_t assigned = rd_kafka_assign(consumer_, partitions); assigned) {
      spdlog::error("Kafka assignment failed: {}", rd_kafka_err2str(assigned));
    }
    if (assign_error != nullptr) {
      spdlog::error("Kafka assignment failed: {}", rd_kafka_error_string(assign_error));
      rd_kafka_error_destroy(assign_error);
    }
    return;
  }
  std::vector<std::string> names;
  for (int i = 0; i < partitions->cnt; ++i) {
    TopicPartition key{partitions->elems[i].topic, partitions->elems[i].partition};
    assigned_.erase(key);
    at_end_.erase(key);
    if (owner_ != nullptr) {
      // Its next owner starts from the ledger; what this Get read of it is dropped.
      positions_.erase(key);
      revoked_in_get_.insert(key);
      names.push_back(PartitionName(key.first, key.second));
    }
  }
  if (owner_ != nullptr) owner_->Revoked(names);
  spdlog::info("Kafka partitions revoked: {} ({})", partitions->cnt,
               rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(error)));
  if (cooperative) {
    if (rd_kafka_error_t* unassign_error = rd_kafka_incremental_unassign(consumer_, partitions)) {
      rd_kafka_error_destroy(unassign_error);
    }
  } else {
    rd_kafka_assign(consumer_, nullptr);
  }
}

Status KafkaSource::StartStream(const Value& pagination) {
  if (!started_) {
    started_ = true;
    // Resume: the pagination is the cursor of the last durable write.
    ForEachPosition(pagination,
                    [&](const TopicPartition& key, int64_t next) { positions_[key] = next; });
    committed_.clear();
  }
  if (!subscribed_) {
    rd_kafka_topic_partition_list_t* topics =
        rd_kafka_topic_partition_list_new(static_cast<int>(options_.topics.size()));
    for (const TopicRoute& topic : options_.topics) {
      rd_kafka_topic_partition_list_add(topics, topic.name.c_str(), RD_KAFKA_PARTITION_UA);
    }
    rd_kafka_resp_err_t error = rd_kafka_subscribe(consumer_, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (error != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return UnavailableError(
          fmt::format("cannot subscribe to the Kafka topics: {}", rd_kafka_err2str(error)));
    }
    subscribed_ = true;
  }
  if (unsent_commit_.has_value()) {
    Value again = *std::exchange(unsent_commit_, std::nullopt);
    BIZON_RETURN_IF_ERROR(Commit(again));
  }
  return Status::Ok();
}

Result<SourceIteration> KafkaSource::GetStream(const Value& pagination) {
  BIZON_RETURN_IF_ERROR(StartStream(pagination));
  SourceIteration iteration;
  iteration.records.Reserve(last_batch_records_, last_batch_bytes_ + last_batch_bytes_ / 8);
  auto deadline = Clock::now() + std::chrono::seconds(options_.consumer_timeout_s);
  int64_t consumed = 0;
  // With a partition owner: the partition of each record in the iteration, so that records of
  // a partition revoked during this Get can be dropped before it returns.
  std::vector<TopicPartition> record_partitions;
  revoked_in_get_.clear();
  while (consumed < options_.batch_size) {
    MessagePtr message = PollUntil(consumer_, deadline);
    last_poll_ = Clock::now();
    if (!claim_error_.ok()) {
      return Fail(std::exchange(claim_error_, Status::Ok())
                      .WithContext("cannot claim the assigned Kafka partitions"));
    }
    // Dropped at once: a partition revoked and assigned again within one poll (an eager
    // rebalance) keeps what is read of it from here on, at the position the ledger gave it.
    if (!revoked_in_get_.empty()) DropRevoked(iteration.records, record_partitions);
    if (message == nullptr) break;
    if (message->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      at_end_.insert({rd_kafka_topic_name(message->rkt), message->partition});
      // Caught up everywhere: hand over what we have rather than wait for the timeout.
      if (consumed > 0 && at_end_.size() >= assigned_.size()) break;
      continue;
    }
    if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      BIZON_RETURN_IF_ERROR(HandleMessageError(*message));
      continue;
    }
    TopicPartition key{rd_kafka_topic_name(message->rkt), message->partition};
    if (owner_ != nullptr && !assigned_.contains(key)) continue;  // Fetched before a revocation.
    BIZON_RETURN_IF_ERROR(AddMessage(*message, iteration.records));
    if (owner_ != nullptr) record_partitions.resize(iteration.records.size(), key);
    positions_[key] = message->offset + 1;
    at_end_.erase(key);
    ++consumed;
  }
  BIZON_RETURN_IF_ERROR(CheckFatalError());
  if (owner_ != nullptr) {
    for (const auto& [key, next] : positions_) {
      if (assigned_.contains(key)) {
        iteration.partition_positions.emplace_back(PartitionName(key.first, key.second), next);
      }
    }
  }
  iteration.next_pagination = StreamPagination();
  return iteration;
}

Value KafkaSource::StreamPagination() const {
  // Every configured topic is a key, so the pagination is never empty: a stream does not end.
  Value::Map by_topic;
  for (const TopicRoute& topic : options_.topics)
    by_topic.emplace_back(topic.name, Value::EmptyMap());
  for (const auto& [key, next] : positions_) {
    Value* partitions = nullptr;
    for (auto& [name, value] : by_topic) {
      if (name == key.first) partitions = &value;
    }
    if (partitions == nullptr) {
      by_topic.emplace_back(key.first, Value::EmptyMap());
      partitions = &by_topic.back().second;
    }
    partitions->Set(std::to_string(key.second), Value(next));
  }
  return Value(std::move(by_topic));
}

void KafkaSource::DropRevoked(RecordBatch& records,
                              std::vector<TopicPartition>& record_partitions) {
  RecordBatch kept;
  std::vector<TopicPartition> kept_partitions;
  size_t begin = 0;
  for (size_t i = 0; i <= records.size(); ++i) {
    bool drop = i < records.size() && revoked_in_get_.contains(record_partitions[i]);
    if (i == records.size() || drop) {
      if (i > begin) {
        kept.AppendRange(records, begin, i);
        kept_partitions.insert(kept_partitions.end(),
                               record_partitions.begin() + static_cast<std::ptrdiff_t>(begin),
                               record_partitions.begin() + static_cast<std::ptrdiff_t>(i));
      }
      begin = i + 1;
    }
  }
  if (kept.size() < records.size()) {
    spdlog::info(
        "Kafka: {} records of revoked partitions dropped from the batch in hand; the "
        "partitions' next owner reads them",
        records.size() - kept.size());
  }
  records = std::move(kept);
  record_partitions = std::move(kept_partitions);
  revoked_in_get_.clear();
}

std::string KafkaSource::MemberId() const {
  if (options_.sync_mode != SyncMode::kStream) return "";
  std::string id = InstanceId();
  if (id != kNoInstanceId) return id;
  // Static membership off: a restarted process is a new member, named by host and process.
  return fmt::format("{}.{}", HostName(), ::getpid());
}

bool KafkaSource::LostStaticMembership() const {
  if (InstanceId() == kNoInstanceId || assigned_.empty()) return false;
  char* member = rd_kafka_memberid(consumer_);
  bool lost = member == nullptr || *member == '\0';
  if (member != nullptr) rd_kafka_mem_free(consumer_, member);
  return lost;
}

Status KafkaSource::RecreateConsumer(std::string_view why) {
  spdlog::warn("{}: the consumer left the group; recreating it", why);
  DestroyConsumer();
  {
    // The old consumer's fatal state (a fence by itself) dies with it.
    std::lock_guard lock(fatal_mutex_);
    fatal_error_.clear();
  }
  return CreateConsumer();
}

Status KafkaSource::Commit(const Value& up_to) {
  if (options_.sync_mode != SyncMode::kStream || consumer_ == nullptr || !options_.commit_offsets) {
    return Status::Ok();
  }
  if (LostStaticMembership()) {
    // librdkafka dropped its member id after max.poll.interval.ms (a batch slower than that).
    // A commit now would carry our group.instance.id without the member id the broker knows,
    // and be fenced, fatally, as if another process had taken the id. A new consumer rejoins
    // under the same id at once and starts from our positions.
    unsent_commit_ = up_to;
    return RecreateConsumer(
        "Kafka commit skipped (max.poll.interval.ms exceeded, the static member's id was reset)");
  }
  unsent_commit_.reset();
  if (assigned_.empty()) {
    // Not joined yet, or rejoining after RecreateConsumer: nothing could be sent now.
    unsent_commit_ = up_to;
    return Status::Ok();
  }
  // What the recorded cursor covers, which may be behind positions_ (what was fetched).
  rd_kafka_topic_partition_list_t* offsets =
      rd_kafka_topic_partition_list_new(static_cast<int>(positions_.size()));
  std::map<TopicPartition, int64_t> sending;
  ForEachPosition(up_to, [&](const TopicPartition& key, int64_t next) {
    if (!assigned_.contains(key)) return;  // Another member owns it now.
    auto previous = committed_.find(key);
    if (previous != committed_.end() && previous->second == next) return;
    rd_kafka_topic_partition_list_add(offsets, key.first.c_str(), key.second)->offset = next;
    sending[key] = next;
  });
  if (offsets->cnt == 0) {
    rd_kafka_topic_partition_list_destroy(offsets);
    return Status::Ok();
  }
  rd_kafka_resp_err_t error = rd_kafka_commit(consumer_, offsets, /*async=*/0);
  rd_kafka_topic_partition_list_destroy(offsets);
  if (error == RD_KAFKA_RESP_ERR_NO_ERROR) {
    for (const auto& [key, next] : sending) committed_[key] = next;
    return Status::Ok();
  }
  if (error == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
      error == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID) {
    // The group moved on without us: rejoin with a new consumer. The next assignment starts
    // from our positions, which the backend already holds.
    unsent_commit_ = up_to;
    return RecreateConsumer(fmt::format("Kafka commit failed ({})", rd_kafka_err2name(error)));
  }
  if (error == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID &&
      Clock::now() - last_poll_ >= MaxPollInterval()) {
    // The same self-fence, when librdkafka reset the member id after the check above.
    unsent_commit_ = up_to;
    return RecreateConsumer(fmt::format("Kafka commit failed ({})", rd_kafka_err2name(error)));
  }
  // Not a run failure: the backend cursor is already stored and is what a resume reads. The
  // group's offsets lag behind until this cursor is sent again at the next Get (or a later one
  // supersedes it): the last batch of a quiet topic must not leave them behind for good.
  spdlog::warn("Kafka commit failed ({}); it is sent again at the next poll",
               rd_kafka_err2str(error));
  unsent_commit_ = up_to;
  return Status::Ok();
}

// --- bounded mode (full_refresh) ---------------------------------------------------------------

Status KafkaSource::StartBounded(const Value& pagination) {
  const std::string& topic = options_.topics.front().name;
  bounded_.clear();
  if (const Value* partitions = pagination.Find("partitions");
      partitions != nullptr && partitions->is_map()) {
    for (const auto& [index, state] : partitions->AsMap()) {
      bounded_[static_cast<int32_t>(std::strtol(index.c_str(), nullptr, 10))] = {
          .first = state.GetInteger("first"),
          .last = state.GetInteger("last"),
          .to_fetch = state.GetInteger("to_fetch")};
    }
  } else {
    BIZON_ASSIGN_OR_RETURN(auto counts, FetchPartitionCounts());
    for (int partition = 0; partition < counts[topic]; ++partition) {
      int64_t low = 0;
      int64_t high = 0;
      rd_kafka_resp_err_t error =
          rd_kafka_query_watermark_offsets(consumer_, topic.c_str(), partition, &low, &high,
                                           static_cast<int>(options_.consumer_timeout_s * 1000));
      if (error != RD_KAFKA_RESP_ERR_NO_ERROR) {
        return UnavailableError(fmt::format("cannot read the watermarks of {} partition {}: {}",
                                            topic, partition, rd_kafka_err2str(error)));
      }
      bounded_[partition] = {.first = low, .last = high, .to_fetch = low};
    }
  }
  rd_kafka_topic_partition_list_t* assignment =
      rd_kafka_topic_partition_list_new(static_cast<int>(bounded_.size()));
  for (const auto& [partition, state] : bounded_) {
    if (state.done()) continue;
    rd_kafka_topic_partition_list_add(assignment, topic.c_str(), partition)->offset =
        state.to_fetch;
  }
  rd_kafka_resp_err_t error = rd_kafka_assign(consumer_, assignment);
  rd_kafka_topic_partition_list_destroy(assignment);
  if (error != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return UnavailableError(
        fmt::format("cannot assign the partitions of {}: {}", topic, rd_kafka_err2str(error)));
  }
  started_ = true;
  return Status::Ok();
}

Result<SourceIteration> KafkaSource::GetBounded(const Value& pagination) {
  if (!started_) BIZON_RETURN_IF_ERROR(StartBounded(pagination));
  const std::string& topic = options_.topics.front().name;
  auto finish = [&](int32_t partition) {
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(list, topic.c_str(), partition);
    rd_kafka_pause_partitions(consumer_, list);  // Ignore what arrived after the start.
    rd_kafka_topic_partition_list_destroy(list);
  };

  SourceIteration iteration;
  iteration.records.Reserve(last_batch_records_, last_batch_bytes_ + last_batch_bytes_ / 8);
  auto deadline = Clock::now() + std::chrono::seconds(options_.consumer_timeout_s);
  int64_t consumed = 0;
  bool progressed = false;
  std::vector<MessagePtr> messages;
  bool timed_out = false;
  while (consumed < options_.batch_size && !BoundedDone() && !timed_out) {
    NextMessages(consumer_, deadline, static_cast<size_t>(options_.batch_size - consumed),
                 messages);
    timed_out = messages.empty();
    for (MessagePtr& message : messages) {
      auto state = bounded_.find(message->partition);
      if (message->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        if (state != bounded_.end() && !state->second.done()) {
          // Offsets up to the end that never arrive as messages (transaction markers) count too.
          state->second.to_fetch = std::max(state->second.to_fetch, message->offset);
          if (state->second.done()) {
            progressed = true;
            finish(message->partition);
          }
        }
        continue;
      }
      if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        BIZON_RETURN_IF_ERROR(HandleMessageError(*message));
        continue;
      }
      if (state == bounded_.end() || state->second.done() ||
          message->offset >= state->second.last) {
        continue;
      }
      BIZON_RETURN_IF_ERROR(AddMessage(*message, iteration.records));
      state->second.to_fetch = message->offset + 1;
      progressed = true;
      ++consumed;
      if (state->second.done()) finish(state->first);
    }
  }
  BIZON_RETURN_IF_ERROR(CheckFatalError());
  if (BoundedDone()) {
    iteration.next_pagination = Value::EmptyMap();
    return iteration;
  }
  if (!progressed) return Fail(BoundedStalled());
  iteration.next_pagination = BoundedPagination();
  return iteration;
}

bool KafkaSource::BoundedDone() const {
  for (const auto& [partition, state] : bounded_) {
    if (!state.done()) return false;
  }
  return true;
}

Status KafkaSource::BoundedStalled() const {
  std::string pending;
  for (const auto& [partition, state] : bounded_) {
    if (!state.done()) {
      pending += fmt::format("{}{} at {} of {}", pending.empty() ? "" : ", ", partition,
                             state.to_fetch, state.last);
    }
  }
  return UnavailableError(fmt::format(
      "no message from topic {} within consumer_timeout ({} s); partitions still to read: {}",
      options_.topics.front().name, options_.consumer_timeout_s, pending));
}

Value KafkaSource::BoundedPagination() const {
  Value::Map partitions;
  for (const auto& [partition, state] : bounded_) {
    partitions.emplace_back(std::to_string(partition),
                            Value(Value::Map{{"first", Value(state.first)},
                                             {"last", Value(state.last)},
                                             {"to_fetch", Value(state.to_fetch)}}));
  }
  return Value(Value::Map{{"name", Value(options_.topics.front().name)},
                          {"partitions", Value(std::move(partitions))}});
}

}  // namespace kafka

Status RegisterKafkaSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "kafka",
      .description = "Kafka or Redpanda topics, Avro through an Apicurio or Confluent schema "
                     "registry, or JSON; runs continuously with sync_mode stream.",
      .streams = {{"topic", false, "Messages of the configured topics."}},
      .config =
          {
              .fields = kafka::KafkaSourceFields(),
              .unknown_keys = UnknownKeys::kWarn,
          },
      .normalize_config = kafka::TopicsFromStreams,
      .factory = [](const SourceContext& context) -> Result<std::unique_ptr<Source>> {
        BIZON_ASSIGN_OR_RETURN(kafka::KafkaSourceOptions options, kafka::ReadKafkaOptions(context));
        return std::make_unique<kafka::KafkaSource>(std::move(options));
      },
  });
}

}  // namespace bizon
