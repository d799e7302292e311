#include "engine/roles.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>
#include <thread>

#include "engine/backend/backend_factory.h"
#include "engine/run_lock.h"

namespace bizon {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kJobCheckInterval = std::chrono::seconds(2);
constexpr auto kBackPressurePoll = std::chrono::milliseconds(200);

/// The consumer's backend, seen through a hook: once a destination cursor is recorded (the rows
/// it covers are durable), the frames of the iterations it covers are acknowledged.
class SettlingBackend final : public Backend {
 public:
  SettlingBackend(Backend& inner, BrokerSource& queue) : inner_(inner), queue_(queue) {}

  Status CreateDestinationCursor(const DestinationCursor& cursor) override {
    BIZON_RETURN_IF_ERROR(inner_.CreateDestinationCursor(cursor));
    if (cursor.success) {
      Status settled = queue_.Settle(cursor.to_source_iteration);
      if (!settled.ok()) {
        // The cursor is recorded: the frames come again and are skipped as delivered.
        spdlog::warn("Queue: cannot acknowledge iterations up to {}: {}",
                     cursor.to_source_iteration, settled.message());
      }
    }
    return Status::Ok();
  }

  Status Migrate() override { return inner_.Migrate(); }
  Status AcquireRunLock(const StreamKey& key) override { return inner_.AcquireRunLock(key); }
  Result<StreamJob> CreateStreamJob(const StreamKey& key, std::string_view sync_mode,
                                    std::optional<int64_t> total_records,
                                    std::string_view owner) override {
    return inner_.CreateStreamJob(key, sync_mode, total_records, owner);
  }
  Status UpdateStreamJobStatus(std::string_view job_id, JobStatus status,
                               std::optional<std::string> error_message) override {
    return inner_.UpdateStreamJobStatus(job_id, status, std::move(error_message));
  }
  Status SetIncrementalState(std::string_view job_id, std::string_view state_json) override {
    return inner_.SetIncrementalState(job_id, state_json);
  }
  Status SetJobOwner(std::string_view job_id, std::string_view owner) override {
    return inner_.SetJobOwner(job_id, owner);
  }
  Result<std::optional<StreamJob>> GetStreamJobById(std::string_view job_id) override {
    return inner_.GetStreamJobById(job_id);
  }
  Result<std::optional<StreamJob>> GetRunningStreamJob(const StreamKey& key) override {
    return inner_.GetRunningStreamJob(key);
  }
  Result<std::optional<StreamJob>> GetLastSuccessfulStreamJob(const StreamKey& key) override {
    return inner_.GetLastSuccessfulStreamJob(key);
  }
  Status CreateSourceCursor(const SourceCursorRow& cursor) override {
    return inner_.CreateSourceCursor(cursor);
  }
  Result<std::optional<DestinationCursor>> GetLastDestinationCursor(
      std::string_view job_id) override {
    return inner_.GetLastDestinationCursor(job_id);
  }
  Result<int64_t> GetWrittenRowCount(std::string_view job_id) override {
    return inner_.GetWrittenRowCount(job_id);
  }
  Result<StreamReset> CreateStreamReset(const StreamKey& key) override {
    return inner_.CreateStreamReset(key);
  }
  Result<std::optional<StreamReset>> GetPendingStreamReset(const StreamKey& key) override {
    return inner_.GetPendingStreamReset(key);
  }
  Result<std::optional<StreamReset>> GetStreamResetByJobId(std::string_view job_id) override {
    return inner_.GetStreamResetByJobId(job_id);
  }
  Status ConsumeStreamReset(std::string_view reset_id, std::string_view job_id) override {
    return inner_.ConsumeStreamReset(reset_id, job_id);
  }
  Result<int64_t> CancelPendingStreamResets(const StreamKey& key) override {
    return inner_.CancelPendingStreamResets(key);
  }

 private:
  Backend& inner_;
  BrokerSource& queue_;
};

/// The producer's end: publishes through the broker, pausing while the destination lags too far
/// behind (read from the backend's cursors), and stopping when the job is no longer the
/// consumer's running job.
class PacedSink final : public MessageSink {
 public:
  PacedSink(BrokerSink& inner, Backend& backend, std::string job_id, int64_t max_unconsumed_bytes,
            const std::atomic<bool>& stop)
      : inner_(inner),
        backend_(backend),
        job_id_(std::move(job_id)),
        max_unconsumed_bytes_(max_unconsumed_bytes),
        stop_(stop) {}

  bool Push(QueueMessage message) override {
    bool data = message.kind == QueueMessage::Kind::kData;
    if (data && !WaitForRoom()) return false;
    int64_t iteration = message.iteration;
    int64_t bytes = static_cast<int64_t>(message.ByteSize());
    int64_t records = static_cast<int64_t>(message.records.size());
    if (!inner_.Push(std::move(message))) return false;
    if (data) {
      largest_iteration_bytes_ = std::max(largest_iteration_bytes_, bytes);
      unconsumed_[iteration] = bytes;
      unconsumed_bytes_ += bytes;
      records_published_ += records;
    } else {
      termination_delivered_ = true;
    }
    return true;
  }

  /// Why Push refused (the job ended, the broker failed); ok when it never did.
  Status error() const { return error_.ok() ? inner_.error() : error_; }
  bool termination_delivered() const { return termination_delivered_; }
  int64_t records_published() const { return records_published_; }

 private:
  bool WaitForRoom() {
    bool logged = false;
    while (true) {
      if (stop_.load()) {
        error_ = CancelledError("the producer was asked to stop");
        return false;
      }
      bool full = Full();
      if (full || Clock::now() - last_check_ >= kJobCheckInterval) {
        if (Status checked = Refresh(); !checked.ok()) {
          error_ = checked;
          return false;
        }
        full = Full();
      }
      if (!full) {
        if (logged) spdlog::info("Queue: the consumer caught up, publishing again");
        return true;
      }
      if (!logged) {
        spdlog::info("Queue: waiting for the consumer: {} MiB published are not written yet",
                     unconsumed_bytes_ >> 20);
        logged = true;
      }
      std::this_thread::sleep_for(kBackPressurePoll);
    }
  }

  /// Room for two iterations beyond the bound, so the consumer's next write always has data.
  bool Full() const {
    return unconsumed_bytes_ > max_unconsumed_bytes_ + 2 * largest_iteration_bytes_;
  }

  /// Reads the job and its last cursor: drops what the destination recorded, and fails when the
  /// job is no longer running under a consumer.
  Status Refresh() {
    last_check_ = Clock::now();
    BIZON_ASSIGN_OR_RETURN(std::optional<StreamJob> job, backend_.GetStreamJobById(job_id_));
    if (!job || job->status != JobStatus::kRunning || job->owner.empty()) {
      std::string state = !job                                 ? "gone"
                          : job->status != JobStatus::kRunning ? std::string(ToString(job->status))
                                                               : "paused (its consumer stopped)";
      return Status(StatusCode::kCancelled,
                    fmt::format("job {} is {} in the backend; start the producer again for the "
                                "consumer's next run",
                                job_id_, state),
                    FailureClass::kQueue);
    }
    BIZON_ASSIGN_OR_RETURN(std::optional<DestinationCursor> cursor,
                           backend_.GetLastDestinationCursor(job_id_));
    if (cursor) {
      auto covered = unconsumed_.upper_bound(cursor->to_source_iteration);
      for (auto it = unconsumed_.begin(); it != covered; ++it) unconsumed_bytes_ -= it->second;
      unconsumed_.erase(unconsumed_.begin(), covered);
    }
    return Status::Ok();
  }

  BrokerSink& inner_;
  Backend& backend_;
  std::string job_id_;
  int64_t max_unconsumed_bytes_;
  const std::atomic<bool>& stop_;
  std::map<int64_t, int64_t> unconsumed_;  // Iteration -> bytes, not yet in a cursor.
  int64_t unconsumed_bytes_ = 0;
  int64_t largest_iteration_bytes_ = 0;
  int64_t records_published_ = 0;
  bool termination_delivered_ = false;
  Clock::time_point last_check_ = Clock::now();
  Status error_;
};

/// The bound must exceed what the consumer holds before it writes (its buffer; PacedSink adds
/// the iterations in flight), or both sides would wait for each other until the buffer's
/// flush timeout.
int64_t UnconsumedBound(const PipelineSettings& settings, const BrokerQueueConfig& queue) {
  return std::max<int64_t>(queue.max_unconsumed_bytes, 2 * settings.buffer_bytes);
}

/// Runs the producer into the broker; the result says queue_error when the broker failed.
ProducerResult Produce(Source& source, Backend& backend, const PipelineSettings& settings,
                       const JobPlan& plan, const BrokerQueueConfig& queue,
                       const std::atomic<bool>& stop, bool& termination_delivered,
                       int64_t& records_published) {
  termination_delivered = false;
  auto sink = OpenBrokerSink(queue, plan.job.id);
  if (!sink) return {ReturnStatus::kQueueError, sink.error()};
  spdlog::info("Producer: publishing job {} to {}", plan.job.id, queue.Describe());
  PacedSink paced(**sink, backend, plan.job.id, UnconsumedBound(settings, queue), stop);
  ProducerResult result = RunProducer(source, &backend, settings, plan, paced, stop);
  termination_delivered = paced.termination_delivered();
  records_published = paced.records_published();
  if (Status refused = paced.error(); !refused.ok()) {
    bool stopped = refused.code() == StatusCode::kCancelled;
    if (result.status == ReturnStatus::kSuccess || result.status == ReturnStatus::kKilledByRunner) {
      result = {stopped ? ReturnStatus::kKilledByRunner : ReturnStatus::kQueueError, refused};
    }
  }
  return result;
}

}  // namespace

std::optional<RunRole> ParseRunRole(std::string_view text) {
  for (RunRole role : {RunRole::kAll, RunRole::kProducer, RunRole::kConsumer}) {
    if (ToString(role) == text) return role;
  }
  return std::nullopt;
}

std::string_view ToString(RunRole role) {
  switch (role) {
    case RunRole::kAll:
      return "all";
    case RunRole::kProducer:
      return "producer";
    case RunRole::kConsumer:
      return "consumer";
  }
  return "all";
}

Status CheckRole(RunRole role, const std::string& file_name, const Value& config,
                 const PipelineSettings& settings, std::string_view runner) {
  if (role == RunRole::kAll) return Status::Ok();
  const Value* queue_type = config.FindPath("engine.queue.type");
  std::string type =
      queue_type != nullptr && queue_type->is_string() ? queue_type->AsString() : "python_queue";
  if (type != "kafka" && type != "rabbitmq") {
    return InvalidArgumentError(
        fmt::format("{}: engine.queue.type: --role {} needs a kafka or rabbitmq queue; {} lives "
                    "inside one process",
                    file_name, ToString(role), type));
  }
  if (runner == "stream") {
    return InvalidArgumentError(
        fmt::format("{}: engine.runner.type: --role {} needs the thread or process runner; the "
                    "stream runner does not use a queue",
                    file_name, ToString(role)));
  }
  if (IsProcessLocal(settings.backend_config)) {
    return InvalidArgumentError(
        fmt::format("{}: engine.backend.type: --role {} needs a backend both processes reach "
                    "(sqlite or postgres); sqlite_in_memory lives inside one process",
                    file_name, ToString(role)));
  }
  return Status::Ok();
}

BrokeredSides RunThroughBroker(RunRole role, Source& source, Destination& destination,
                               Backend& backend, const PipelineSettings& settings,
                               const JobPlan& plan, const BrokerQueueConfig& queue,
                               TransformChain* transforms) {
  BrokeredSides result;
  auto messages = OpenBrokerSource(queue, plan.job.id, plan.start_iteration);
  if (!messages) {
    result.consumer = {ReturnStatus::kQueueError, std::nullopt, messages.error()};
    if (role == RunRole::kAll) result.producer = {ReturnStatus::kQueueError, messages.error()};
    return result;
  }
  spdlog::info("Consumer: reading job {} from {} (from iteration {})", plan.job.id,
               queue.Describe(), plan.start_iteration);
  BrokerSource& broker_source = **messages;
  SettlingBackend settling(backend, broker_source);
  std::atomic<bool> stop_producer{false};
  std::atomic<bool> stop_consumer{false};
  std::thread producer_thread;
  if (role == RunRole::kAll) {
    producer_thread = std::thread([&] {
      bool termination_delivered = false;
      auto producer_backend = OpenBackend(settings.backend_config);
      if (!producer_backend) {
        result.producer = {ReturnStatus::kBackendError,
                           producer_backend.error().WithFailureClass(FailureClass::kBackend)};
      } else {
        result.producer = Produce(source, **producer_backend, settings, plan, queue, stop_producer,
                                  termination_delivered, result.records_published);
      }
      // Nothing will tell the consumer the producer is gone: stop it here.
      if (!termination_delivered) stop_consumer = true;
    });
  }
  result.consumer =
      RunConsumer(broker_source, destination, settling, settings, plan, stop_consumer, transforms);
  if (result.consumer.status == ReturnStatus::kSuccess || result.consumer.producer_status) {
    // Published, or failed upstream: the termination and everything before it are handled.
    if (Status settled = broker_source.SettleAll(); !settled.ok()) {
      spdlog::warn("Queue: cannot acknowledge the end of job {}: {}", plan.job.id,
                   settled.message());
    }
  } else {
    stop_producer = true;
  }
  if (producer_thread.joinable()) producer_thread.join();
  return result;
}

ProducerRoleResult RunProducerRole(Source& source, Backend& backend,
                                   const PipelineSettings& settings, const BrokerQueueConfig& queue,
                                   double job_wait_s) {
  ProducerRoleResult result;
  auto fail = [&](ReturnStatus status, Status error) {
    spdlog::error("{}", error.message());
    result.producer = {status, std::move(error)};
    return result;
  };
  // One producer per pipeline: a lock of its own, beside (never against) the consumer's.
  StreamKey producer_key = settings.key;
  producer_key.name += " (producer)";
  std::optional<RunLock> lock;
  if (std::optional<std::string> path = SqliteFilePath(settings.backend_config)) {
    auto acquired = RunLock::Acquire(*path, producer_key);
    if (!acquired) return fail(ReturnStatus::kBackendError, acquired.error());
    lock.emplace(std::move(*acquired));
  }
  if (Status locked = backend.AcquireRunLock(producer_key); !locked.ok()) {
    return fail(ReturnStatus::kBackendError, locked.WithFailureClass(FailureClass::kBackend));
  }

  // The consumer opens the job; wait for it.
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(job_wait_s * 1e3));
  std::optional<StreamJob> job;
  bool logged = false;
  while (true) {
    auto running = backend.GetRunningStreamJob(settings.key);
    if (!running) {
      return fail(ReturnStatus::kBackendError,
                  running.error().WithFailureClass(FailureClass::kBackend));
    }
    if (*running && !(*running)->owner.empty()) {
      job = std::move(*running);
      break;
    }
    if (Clock::now() >= deadline) {
      return fail(ReturnStatus::kBackendError,
                  Status(StatusCode::kFailedPrecondition,
                         fmt::format("no consumer opened a job for pipeline '{}' ({}.{}) within "
                                     "{} s; start `bizon run --role consumer` with the same "
                                     "config and backend first",
                                     settings.key.name, settings.key.source_name,
                                     settings.key.stream_name, job_wait_s),
                         FailureClass::kBackend));
    }
    if (!logged) {
      spdlog::info("Producer: waiting for the consumer to open a job for {}.{}",
                   settings.key.source_name, settings.key.stream_name);
      logged = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  result.job_id = job->id;

  JobPlan plan;
  plan.job = *job;
  plan.resumed = true;
  if (settings.sync_mode == SyncMode::kIncremental) {
    auto reset = backend.GetStreamResetByJobId(job->id);
    if (!reset) {
      return fail(ReturnStatus::kBackendError,
                  reset.error().WithFailureClass(FailureClass::kBackend));
    }
    plan.is_reset = reset->has_value();
  }
  if (Status planned = PlanStart(backend, settings, plan); !planned.ok()) {
    return fail(ReturnStatus::kBackendError, planned.WithFailureClass(FailureClass::kBackend));
  }
  std::atomic<bool> stop{false};
  bool termination_delivered = false;
  result.producer = Produce(source, backend, settings, plan, queue, stop, termination_delivered,
                            result.records_published);
  if (result.producer.status == ReturnStatus::kSuccess) {
    spdlog::info("Producer: published {} records of job {}", result.records_published, job->id);
  }
  return result;
}

}  // namespace bizon
