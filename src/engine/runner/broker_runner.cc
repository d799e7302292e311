// The broker runner: the producer and the consumer talk through a network queue (kafka,
// rabbitmq), in one process (`--role all`) or split across processes and hosts
// (`--role producer|consumer`).
//
// Who does what when split:
// - the consumer owns the job: it takes the run lock, runs InitJob (creating or resuming the
//   job), opens the destination, records the cursors and publishes;
// - the producer takes a lock of its own (one producer per pipeline), waits for the consumer's
//   running job in the shared backend, starts from that job's last destination cursor and
//   publishes every iteration, then the termination (or the error termination);
// - back-pressure: the producer pauses while what it published and the destination did not
//   record yet exceeds the queue's max_bytes, so a dead consumer stops it instead of letting
//   the broker grow; it stops when the consumer ends the job (fails, is replaced by a new job);
// - acknowledgement: the producer reads the consumer's cursors from the backend as it paces
//   itself, and acknowledges its source up to the latest before each fetch.
#include "engine/runner/broker_runner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>
#include <thread>

#include "engine/backend/backend_factory.h"

namespace bizon {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kJobCheckInterval = std::chrono::seconds(2);
constexpr auto kBackPressurePoll = std::chrono::milliseconds(200);

/// The producer's end: publishes through the broker, pausing while the destination lags too far
/// behind (read from the backend's cursors), and stopping when the job is no longer the
/// consumer's running job.
class PacedSink final : public MessageSink {
 public:
  /// `acks`, when given, receives the pagination of each cursor the consumer recorded (read from
  /// the backend): the producer role acknowledges its source with them.
  PacedSink(BrokerSink& inner, Backend& backend, std::string job_id, int64_t max_unconsumed_bytes,
            const std::atomic<bool>& stop, Acknowledgements* acks)
      : inner_(inner),
        backend_(backend),
        job_id_(std::move(job_id)),
        max_unconsumed_bytes_(max_unconsumed_bytes),
        stop_(stop),
        acks_(acks) {}

  Status Push(QueueMessage message) override {
    Status pushed = PushOne(std::move(message));
    if (!pushed.ok()) refused_ = pushed;
    return pushed;
  }

  /// Why the last Push refused; ok when none did.
  const Status& refused() const { return refused_; }
  bool termination_delivered() const { return termination_delivered_; }
  int64_t records_published() const { return records_published_; }

 private:
  Status PushOne(QueueMessage message) {
    bool data = message.kind == QueueMessage::Kind::kData;
    if (data) BIZON_RETURN_IF_ERROR(WaitForRoom());
    int64_t iteration = message.iteration;
    int64_t bytes = static_cast<int64_t>(message.ByteSize());
    int64_t records = static_cast<int64_t>(message.records.size());
    BIZON_RETURN_IF_ERROR(inner_.Push(std::move(message)));
    if (data) {
      largest_iteration_bytes_ = std::max(largest_iteration_bytes_, bytes);
      unconsumed_[iteration] = bytes;
      unconsumed_bytes_ += bytes;
      records_published_ += records;
    } else {
      termination_delivered_ = true;
    }
    return Status::Ok();
  }

  Status WaitForRoom() {
    bool logged = false;
    while (true) {
      if (stop_.load()) {
        return CancelledError("the producer was asked to stop", FailureClass::kKilled);
      }
      bool full = Full();
      if (full || Clock::now() - last_check_ >= kJobCheckInterval) {
        BIZON_RETURN_IF_ERROR(Refresh().WithFailureClass(FailureClass::kQueue));
        full = Full();
      }
      if (!full) {
        if (logged) spdlog::info("Queue: the consumer caught up, publishing again");
        return Status::Ok();
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
                    FailureClass::kKilled);
    }
    BIZON_ASSIGN_OR_RETURN(std::optional<DestinationCursor> cursor,
                           backend_.GetLastDestinationCursor(job_id_));
    if (cursor) {
      auto covered = unconsumed_.upper_bound(cursor->to_source_iteration);
      for (auto it = unconsumed_.begin(); it != covered; ++it) unconsumed_bytes_ -= it->second;
      unconsumed_.erase(unconsumed_.begin(), covered);
      if (acks_ != nullptr && cursor->pagination) {
        BIZON_ASSIGN_OR_RETURN(Value pagination, Value::FromJson(*cursor->pagination));
        acks_->Post(pagination);
      }
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
  Acknowledgements* acks_;
  Status refused_;
};

/// The bound must exceed what the consumer holds before it writes (its buffer; PacedSink adds
/// the iterations in flight), or both sides would wait for each other until the buffer's
/// flush timeout.
int64_t UnconsumedBound(const PipelineSettings& settings, const BrokerQueueConfig& queue) {
  return std::max<int64_t>(queue.max_unconsumed_bytes, 2 * settings.buffer_bytes);
}

/// What one producer published into the broker.
struct Published {
  ProducerResult producer;
  bool termination_delivered = false;
  int64_t records = 0;
};

/// Runs the producer into the broker. `acks` carries what the consumer recorded to the source.
Published Produce(Source& source, Backend& backend, const PipelineSettings& settings,
                  const JobPlan& plan, const BrokerQueueConfig& queue,
                  const std::atomic<bool>& stop, Acknowledgements& acks, bool acks_from_backend) {
  auto sink = OpenBrokerSink(queue, plan.job.id);
  if (!sink) return {.producer = {sink.error().WithFailureClass(FailureClass::kQueue)}};
  spdlog::info("Producer: publishing job {} to {}", plan.job.id, queue.Describe());
  PacedSink paced(**sink, backend, plan.job.id, UnconsumedBound(settings, queue), stop,
                  acks_from_backend ? &acks : nullptr);
  Published published;
  published.producer = RunProducer(source, &backend, settings, plan, paced, stop, &acks);
  // The termination is pushed without a check (the consumer may be gone for its own reasons);
  // here a refused one is the producer's failure.
  if (published.producer.ok()) published.producer.error = paced.refused();
  published.termination_delivered = paced.termination_delivered();
  published.records = paced.records_published();
  return published;
}

class BrokerRunner final : public Runner {
 public:
  RunnerResult Run(const RunContext& context) override {
    const PipelineSettings& settings = context.settings;
    const JobPlan& plan = context.plan;
    const BrokerQueueConfig& queue = *context.broker;
    RunnerResult result;
    auto messages = OpenBrokerSource(queue, plan.job.id, plan.start_iteration);
    if (!messages) {
      Status error = messages.error().WithFailureClass(FailureClass::kQueue);
      result.consumer = {.error = error};
      if (context.role == RunRole::kAll) result.producer = {error};
      return result;
    }
    spdlog::info("Consumer: reading job {} from {} (from iteration {})", plan.job.id,
                 queue.Describe(), plan.start_iteration);
    BrokerSource& broker_source = **messages;
    std::atomic<bool> stop_producer{false};
    std::atomic<bool> stop_consumer{false};
    Acknowledgements acks;
    std::thread producer_thread;
    if (context.role == RunRole::kAll) {
      producer_thread = std::thread([&] {
        auto producer_backend = OpenBackend(settings.backend_config);
        if (!producer_backend) {
          result.producer = {producer_backend.error().WithFailureClass(FailureClass::kBackend)};
          stop_consumer = true;  // Nothing will tell the consumer the producer is gone.
          return;
        }
        Published published = Produce(context.source, **producer_backend, settings, plan, queue,
                                      stop_producer, acks, /*acks_from_backend=*/false);
        result.producer = published.producer;
        if (!published.termination_delivered) stop_consumer = true;
      });
    }
    result.consumer =
        RunConsumer(broker_source, context.destination, context.backend, settings, plan,
                    stop_consumer, context.transforms,
                    {.recorded =
                         [&broker_source](const DestinationCursor& cursor) {
                           // Once a cursor is recorded, the frames of the iterations it covers are
                           // done.
                           if (Status settled = broker_source.Settle(cursor.to_source_iteration);
                               !settled.ok()) {
                             // The cursor is recorded: the frames come again and are skipped as
                             // delivered.
                             spdlog::warn("Queue: cannot acknowledge iterations up to {}: {}",
                                          cursor.to_source_iteration, settled.message());
                           }
                         },
                     .acknowledge =
                         [&acks](const Value& pagination) {
                           acks.Post(pagination);
                           return Status::Ok();
                         }});
    if (result.consumer->ok() || result.consumer->upstream) {
      // Published, or failed upstream: the termination and everything before it are handled.
      if (Status settled = broker_source.SettleAll(); !settled.ok()) {
        spdlog::warn("Queue: cannot acknowledge the end of job {}: {}", plan.job.id,
                     settled.message());
      }
    } else {
      stop_producer = true;
    }
    if (producer_thread.joinable()) {
      producer_thread.join();
      AcknowledgeLast(context.source, acks, settings, *result.consumer);
    }
    return result;
  }
};

}  // namespace

std::unique_ptr<Runner> MakeBrokerRunner() { return std::make_unique<BrokerRunner>(); }

ProducerRoleResult RunProducerRole(Source& source, Backend& backend,
                                   const PipelineSettings& settings, const BrokerQueueConfig& queue,
                                   double job_wait_s) {
  ProducerRoleResult result;
  auto fail = [&](const Status& error) {
    spdlog::error("{}", error.message());
    result.producer = {error.WithFailureClass(FailureClass::kBackend)};
    return result;
  };
  // One producer per pipeline: a lock of its own, beside (never against) the consumer's.
  StreamKey producer_key = settings.key;
  producer_key.name += " (producer)";
  if (Status locked = backend.AcquireRunLock(producer_key); !locked.ok()) return fail(locked);

  // The consumer opens the job; wait for it.
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(job_wait_s * 1e3));
  std::optional<StreamJob> job;
  bool logged = false;
  while (true) {
    auto running = backend.GetRunningStreamJob(settings.key);
    if (!running) {
      return fail(running.error());
    }
    if (*running && !(*running)->owner.empty()) {
      job = std::move(*running);
      break;
    }
    if (Clock::now() >= deadline) {
      return fail(Status(StatusCode::kFailedPrecondition,
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
      return fail(reset.error());
    }
    plan.is_reset = reset->has_value();
  }
  if (Status planned = PlanStart(backend, settings, plan); !planned.ok()) {
    return fail(planned);
  }
  std::atomic<bool> stop{false};
  Acknowledgements acks;
  Published published =
      Produce(source, backend, settings, plan, queue, stop, acks, /*acks_from_backend=*/true);
  result.producer = published.producer;
  result.records_published = published.records;
  if (result.producer.ok()) {
    spdlog::info("Producer: published {} records of job {}", result.records_published, job->id);
  }
  return result;
}

}  // namespace bizon
