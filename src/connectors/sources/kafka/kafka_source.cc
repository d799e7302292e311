#include "connectors/sources/kafka/kafka_source.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "connectors/registration.h"
#include "connectors/sources/kafka/bounded_read.h"
#include "connectors/sources/kafka/stream_read.h"
#include "kafka/client_config.h"

namespace bizon {
namespace kafka {

KafkaSource::KafkaSource(KafkaSourceOptions options)
    : options_(std::move(options)), decoder_(options_) {
  connection_ = std::make_unique<KafkaConnection>(options_);
  if (options_.sync_mode == SyncMode::kStream) {
    auto stream = std::make_unique<StreamRead>(options_, *connection_, decoder_);
    stream_ = stream.get();
    connection_->SetRebalanceHandler(stream_);
    read_ = std::move(stream);
  } else {
    read_ = std::make_unique<BoundedRead>(options_, *connection_, decoder_);
  }
}

// The consumer leaves its group first, while the stream read still hears the revocations.
KafkaSource::~KafkaSource() { connection_.reset(); }

void KafkaSource::SetPartitionOwner(PartitionOwner* owner) {
  if (stream_ != nullptr) stream_->SetPartitionOwner(owner);
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
  BIZON_RETURN_IF_ERROR(connection_->Open());
  std::string shown;
  for (const auto& [key, value] : options_.client_settings) {
    if (IsSecretSetting(key)) continue;
    shown += fmt::format("{}{}={}", shown.empty() ? "" : ", ", key, value);
  }
  spdlog::info("Kafka consumer config: {}", shown);
  BIZON_ASSIGN_OR_RETURN(auto counts, connection_->FetchPartitionCounts());
  (void)counts;
  return Status::Ok();
}

std::optional<int64_t> KafkaSource::TotalRecordsCount() {
  if (!connection_->Open().ok()) return std::nullopt;
  auto counts = connection_->FetchPartitionCounts();
  if (!counts) return std::nullopt;
  int64_t total = 0;
  for (const TopicRoute& topic : options_.topics) {
    for (int partition = 0; partition < (*counts)[topic.name]; ++partition) {
      auto marks =
          connection_->consumer().QueryWatermarks(topic.name, partition, connection_->timeout());
      if (!marks) return std::nullopt;
      total += marks->high;  // As the original: the high watermark, not high - low.
    }
  }
  return total;
}

Result<SourceIteration> KafkaSource::Get(const Value& pagination) {
  BIZON_RETURN_IF_ERROR(connection_->Open());
  BIZON_RETURN_IF_ERROR(connection_->CheckFatalError());
  SourceIteration iteration;
  iteration.records.Reserve(last_batch_records_, last_batch_bytes_ + last_batch_bytes_ / 8);
  BIZON_RETURN_IF_ERROR(read_->Read(pagination, iteration));
  if (!iteration.records.empty()) {
    last_batch_records_ = iteration.records.size();
    last_batch_bytes_ = iteration.records.PayloadBytes();
  }
  return iteration;
}

Status KafkaSource::Commit(const Value& up_to) { return read_->Commit(up_to); }

std::string KafkaSource::MemberId() const {
  if (options_.sync_mode != SyncMode::kStream) return "";
  std::string id = connection_->InstanceId();
  if (id != KafkaConnection::kNoInstanceId) return id;
  // Static membership off: a restarted process is a new member, named by host and process.
  return fmt::format("{}.{}", HostName(), ::getpid());
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
