#include "engine/pipeline.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include "bizon/clock.h"
#include "engine/backend/backend_factory.h"
#include "engine/consumer.h"
#include "engine/frame_io.h"
#include "engine/job.h"
#include "engine/members.h"
#include "engine/producer.h"
#include "engine/queue/memory_queue.h"
#include "engine/queue/queue_factory.h"
#include "engine/roles.h"
#include "engine/run_lock.h"
#include "engine/settings.h"
#include "engine/transform_workers.h"
#include "monitoring/monitor.h"
#include "python/python_source.h"
#include "python/python_transforms.h"

namespace bizon {

std::string_view ToString(ReturnStatus status) {
  switch (status) {
    case ReturnStatus::kSuccess:
      return "success";
    case ReturnStatus::kRunning:
      return "running";
    case ReturnStatus::kSourceError:
      return "source_error";
    case ReturnStatus::kDestinationError:
      return "destination_error";
    case ReturnStatus::kBackendError:
      return "backend_error";
    case ReturnStatus::kQueueError:
      return "queue_error";
    case ReturnStatus::kTransformError:
      return "transform_error";
    case ReturnStatus::kStreamError:
      return "stream_error";
    case ReturnStatus::kKilledByRunner:
      return "killed_by_runner";
  }
  return "unknown";
}

std::string RunOutcome::StatusText() const {
  std::string verdict = success ? "Success" : "Failure";
  if (stream)
    return fmt::format("Pipeline finished with status {} (Stream: {})", verdict, ToString(*stream));
  if (producer && consumer) {
    return fmt::format("Pipeline finished with status {} (Producer: {}, Consumer: {})", verdict,
                       ToString(*producer), ToString(*consumer));
  }
  // A split role (--role producer|consumer) reports its own side.
  if (producer)
    return fmt::format("Pipeline finished with status {} (Producer: {})", verdict,
                       ToString(*producer));
  if (consumer)
    return fmt::format("Pipeline finished with status {} (Consumer: {})", verdict,
                       ToString(*consumer));
  return fmt::format("Pipeline finished with status {}", verdict);
}

std::string RunOutcome::ToJson() const {
  auto status_or_null = [](const std::optional<ReturnStatus>& status) {
    return status ? Value(ToString(*status)) : Value();
  };
  Value json = Value::EmptyMap();
  json.Set("status", success ? "success" : "failure");
  json.Set("failure_class",
           failure_class == FailureClass::kNone ? Value() : Value(ToString(failure_class)));
  json.Set("job_id", job_id.empty() ? Value() : Value(job_id));
  json.Set("producer", status_or_null(producer));
  json.Set("consumer", status_or_null(consumer));
  json.Set("stream", status_or_null(stream));
  json.Set("records_written", records_written);
  json.Set("started_at", FormatIsoTimestamp(started_at_us));
  json.Set("duration_s", duration_s);
  json.Set("error", error.empty() ? Value() : Value(error));
  if (role != RunRole::kAll) {
    json.Set("role", ToString(role));
    if (role == RunRole::kProducer) json.Set("records_published", records_published);
  }
  return json.ToJson();
}

namespace {

std::string_view ErrorType(FailureClass failure_class) {
  switch (failure_class) {
    case FailureClass::kConfig:
      return "ConfigError";
    case FailureClass::kSource:
      return "SourceError";
    case FailureClass::kDestination:
      return "DestinationError";
    case FailureClass::kBackend:
      return "BackendError";
    case FailureClass::kQueue:
      return "QueueError";
    case FailureClass::kTransform:
      return "TransformError";
    case FailureClass::kStream:
      return "StreamError";
    case FailureClass::kKilled:
      return "Killed";
    case FailureClass::kNone:
    case FailureClass::kUnknown:
      return "Error";
  }
  return "Error";
}

FailureClass ClassOf(ReturnStatus status) {
  switch (status) {
    case ReturnStatus::kSuccess:
    case ReturnStatus::kRunning:
      return FailureClass::kNone;
    case ReturnStatus::kSourceError:
      return FailureClass::kSource;
    case ReturnStatus::kDestinationError:
      return FailureClass::kDestination;
    case ReturnStatus::kBackendError:
      return FailureClass::kBackend;
    case ReturnStatus::kQueueError:
      return FailureClass::kQueue;
    case ReturnStatus::kTransformError:
      return FailureClass::kTransform;
    case ReturnStatus::kStreamError:
      return FailureClass::kStream;
    case ReturnStatus::kKilledByRunner:
      return FailureClass::kKilled;
  }
  return FailureClass::kUnknown;
}

/// The error text carries the run's one failure class: the outcome's, once the runner has
/// blamed a side, so `failure_class` and the text's prefix never disagree.
void NoteError(RunOutcome& outcome, const Status& status) {
  if (status.ok() || !outcome.error.empty()) return;
  FailureClass failure_class =
      outcome.failure_class != FailureClass::kNone ? outcome.failure_class : status.failure_class();
  outcome.error = fmt::format("{}: {}", ErrorType(failure_class), status.message());
}

RunOutcome EarlyFailure(FailureClass failure_class, const Status& status) {
  RunOutcome outcome;
  outcome.failure_class = failure_class;
  NoteError(outcome, status.WithFailureClass(failure_class));
  spdlog::error("{}", status.message());
  return outcome;
}

/// The job's row after a failed run: a full refresh is over (it restarts anyway); incremental
/// and stream jobs stay resumable from their last committed cursor.
void RecordJobFailure(Backend& backend, const PipelineSettings& settings, const JobPlan& plan,
                      const std::string& error) {
  JobStatus status =
      settings.sync_mode == SyncMode::kFullRefresh ? JobStatus::kFailed : JobStatus::kRunning;
  backend.UpdateStreamJobStatus(plan.job.id, status, error.substr(0, 250))
      .IgnoreError();  // The run already failed; its own error is the one to report.
  backend.SetJobOwner(plan.job.id, "").IgnoreError();  // Same: best effort.
}

class QueueSink final : public MessageSink {
 public:
  explicit QueueSink(MemoryQueue& queue) : queue_(queue) {}
  bool Push(QueueMessage message) override { return queue_.Push(std::move(message)); }

 private:
  MemoryQueue& queue_;
};

class QueueSource final : public MessageSource {
 public:
  explicit QueueSource(MemoryQueue& queue) : queue_(queue) {}
  Result<std::optional<QueueMessage>> Next(std::chrono::milliseconds timeout) override {
    return queue_.Pop(timeout);
  }

 private:
  MemoryQueue& queue_;
};

// Process runner channel: length-prefixed encoded messages over a pipe. The pipe's capacity plus
// one message in flight bounds memory; a full pipe blocks the producer process.
class PipeSink final : public MessageSink {
 public:
  explicit PipeSink(int fd) : fd_(fd) {}
  bool Push(QueueMessage message) override { return WriteFrame(fd_, EncodeMessage(message)).ok(); }

 private:
  int fd_;
};

class PipeSource final : public MessageSource {
 public:
  explicit PipeSource(int fd) : fd_(fd) {}
  Result<std::optional<QueueMessage>> Next(std::chrono::milliseconds timeout) override {
    if (!WaitReadable(fd_, static_cast<int>(timeout.count()))) {
      return std::optional<QueueMessage>();
    }
    auto frame = ReadFrame(fd_);
    if (!frame || !frame->has_value()) {
      return Fail(Status(StatusCode::kAborted,
                         "the producer process exited before finishing its stream",
                         FailureClass::kSource));
    }
    BIZON_ASSIGN_OR_RETURN(QueueMessage message, DecodeMessage(**frame));
    return std::optional<QueueMessage>(std::move(message));
  }

 private:
  int fd_;
};

struct RunParts {
  const SourceDescriptor* source_descriptor = nullptr;
  const DestinationDescriptor* destination_descriptor = nullptr;
  SourceContext source_context;
  DestinationContext destination_context;
  /// Set for a custom Python source (`--custom-source` / `source.source_file_path`).
  std::string python_source_path;
  PythonSourceOptions python_options;
  const Value* transforms = nullptr;  // The config's `transforms:` list, when it has one.
};

Result<std::unique_ptr<Source>> MakeSource(const RunParts& parts) {
  auto source =
      parts.python_source_path.empty()
          ? parts.source_descriptor->factory(parts.source_context)
          : OpenPythonSource(parts.python_source_path, parts.source_context, parts.python_options);
  if (!source) return Fail(source.error().WithFailureClass(FailureClass::kSource));
  return source;
}

/// A source that could not be built: a config value it refused (a custom source's pydantic
/// validation, a connector's option) keeps its class `config`; anything else is `source`.
RunOutcome SourceBuildFailure(const Status& error) {
  return EarlyFailure(error.failure_class(), error);
}

struct SidesResult {
  ProducerResult producer;
  ConsumerResult consumer;
};

SidesResult RunThreaded(Source& source, Destination& destination, Backend& backend,
                        const PipelineSettings& settings, const JobPlan& plan,
                        TransformChain* transforms) {
  MemoryQueue queue(settings.queue_limits);
  std::atomic<bool> stop{false};
  Acknowledgements acks;
  SidesResult result;
  std::thread producer_thread([&] {
    auto producer_backend = OpenBackend(settings.backend_config);
    QueueSink sink(queue);
    if (!producer_backend) {
      QueueMessage failed;
      failed.kind = QueueMessage::Kind::kErrorTermination;
      failed.error = producer_backend.error().WithFailureClass(FailureClass::kBackend);
      failed.producer_status = std::string(ToString(ReturnStatus::kBackendError));
      result.producer = {ReturnStatus::kBackendError, failed.error};
      sink.Push(std::move(failed));
      return;
    }
    result.producer =
        RunProducer(source, producer_backend->get(), settings, plan, sink, stop, &acks);
  });
  QueueSource messages(queue);
  result.consumer =
      RunConsumer(messages, destination, backend, settings, plan, stop, transforms, &acks);
  if (result.consumer.status != ReturnStatus::kSuccess) {
    stop = true;
    queue.Close();
  }
  producer_thread.join();
  // The cursors recorded after the producer's last fetch: the source is this thread's now.
  if (std::optional<Value> recorded = acks.Take();
      recorded && result.consumer.status == ReturnStatus::kSuccess) {
    if (Status committed = source.Commit(*recorded); !committed.ok()) {
      // Everything is written and recorded; only the source's own bookmark lags (a kafka
      // group's offsets), and the next run moves it.
      spdlog::warn("Source {}.{} could not acknowledge the last records written: {}",
                   settings.key.source_name, settings.key.stream_name, committed.message());
    }
  }
  return result;
}

SidesResult RunInProcesses(const RunParts& parts, Destination& destination, Backend& backend,
                           const PipelineSettings& settings, const JobPlan& plan,
                           TransformChain* transforms) {
  SidesResult result;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    result.producer = {
        ReturnStatus::kQueueError,
        Status(StatusCode::kUnavailable,
               fmt::format("cannot create the producer pipe: {}", std::strerror(errno)),
               FailureClass::kQueue)};
    result.consumer = {ReturnStatus::kQueueError, std::nullopt, result.producer.error};
    return result;
  }
  std::fflush(nullptr);
  pid_t parent = ::getpid();
  pid_t child = ::fork();
  if (child == 0) {
    // Producer process: its own source instance and backend connection. It must not outlive the
    // parent: an orphan would keep fetching, and it holds the run lock it inherited, so a rerun
    // after the parent was killed would be refused until the orphan noticed.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(static_cast<int>(ReturnStatus::kKilledByRunner));
    ::close(fds[0]);
    ::signal(SIGPIPE, SIG_IGN);
    PipeSink sink(fds[1]);
    std::atomic<bool> stop{false};
    auto fail = [&](ReturnStatus status, const Status& error) {
      QueueMessage failed;
      failed.kind = QueueMessage::Kind::kErrorTermination;
      failed.error = error;
      failed.producer_status = std::string(ToString(status));
      sink.Push(std::move(failed));
      ::_exit(static_cast<int>(status));
    };
    // An in-memory backend lives in the parent's memory. Source cursors are progress notes that
    // recovery never reads, so the child goes without rather than writing them somewhere else.
    std::unique_ptr<Backend> producer_backend;
    if (!IsProcessLocal(settings.backend_config)) {
      auto opened = OpenBackend(settings.backend_config);
      if (!opened) fail(ReturnStatus::kBackendError, opened.error());
      producer_backend = std::move(*opened);
    }
    auto source = MakeSource(parts);
    if (!source) fail(ReturnStatus::kSourceError, source.error());
    ProducerResult produced =
        RunProducer(**source, producer_backend.get(), settings, plan, sink, stop);
    ::close(fds[1]);
    std::fflush(nullptr);
    ::_exit(static_cast<int>(produced.status));
  }
  ::close(fds[1]);
  if (child < 0) {
    ::close(fds[0]);
    Status error(StatusCode::kUnavailable,
                 fmt::format("cannot start the producer process: {}", std::strerror(errno)),
                 FailureClass::kQueue);
    result.producer = {ReturnStatus::kQueueError, error};
    result.consumer = {ReturnStatus::kQueueError, std::nullopt, error};
    return result;
  }
  PipeSource from_producer(fds[0]);
  std::atomic<bool> stop{false};
  // Transforms run in worker processes here, so that they use more than one core.
  std::unique_ptr<TransformWorkers> workers;
  if (transforms != nullptr && transforms->size() > 0) {
    auto started = TransformWorkers::Start(
        *parts.transforms,
        {.workers = settings.transform_workers, .record_timeout = settings.python_timeout},
        from_producer);
    if (!started) {
      result.consumer = {ReturnStatus::kTransformError, std::nullopt,
                         started.error().WithFailureClass(FailureClass::kTransform)};
    } else {
      workers = std::move(*started);
    }
  }
  MessageSource& messages =
      workers != nullptr ? static_cast<MessageSource&>(*workers) : from_producer;
  if (result.consumer.status == ReturnStatus::kSuccess) {
    result.consumer = RunConsumer(messages, destination, backend, settings, plan, stop,
                                  workers != nullptr ? nullptr : transforms);
  }
  workers.reset();
  // Stop the producer only when the consumer failed on its own; after an error termination the
  // producer is already exiting with its status, which a SIGTERM would race and hide.
  bool stopped = false;
  if (result.consumer.status != ReturnStatus::kSuccess && !result.consumer.producer_status) {
    stopped = ::kill(child, SIGTERM) == 0;
  }
  ::close(fds[0]);
  int wait_status = 0;
  while (::waitpid(child, &wait_status, 0) < 0 && errno == EINTR) {
  }
  if (result.consumer.producer_status) {
    result.producer = {*result.consumer.producer_status, result.consumer.error};
  } else if (WIFEXITED(wait_status)) {
    // The child exits with its ReturnStatus; anything else (a sanitizer report, a crash
    // handler) is a failed source.
    int code = WEXITSTATUS(wait_status);
    bool known = code == static_cast<int>(ReturnStatus::kSuccess) ||
                 (code > static_cast<int>(ReturnStatus::kRunning) &&
                  code <= static_cast<int>(ReturnStatus::kKilledByRunner));
    result.producer.status = known ? static_cast<ReturnStatus>(code) : ReturnStatus::kSourceError;
    if (result.producer.status != ReturnStatus::kSuccess) {
      result.producer.error = Status(StatusCode::kAborted,
                                     fmt::format("the producer process exited with code {}", code),
                                     FailureClass::kSource);
    }
  } else {
    int signal_number = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
    result.producer.status = stopped ? ReturnStatus::kKilledByRunner : ReturnStatus::kSourceError;
    result.producer.error =
        Status(StatusCode::kAborted,
               fmt::format("the producer process was killed by signal {}", signal_number),
               FailureClass::kSource);
  }
  return result;
}

// The stream runner stops after the batch in hand on SIGTERM or SIGINT: the batch is written, its
// cursor stored and the source committed, then the run ends successfully with the job left
// running. Without this a `kubectl delete` would kill it mid-batch and the rerun would redo it.
volatile std::sig_atomic_t stream_stop_signal = 0;

void RequestStreamStop(int signal_number) { stream_stop_signal = signal_number; }

/// Installs the stop handlers for the lifetime of one stream run, then restores the previous ones.
class StreamStopSignals {
 public:
  StreamStopSignals() {
    stream_stop_signal = 0;
    struct sigaction action {};
    action.sa_handler = RequestStreamStop;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGTERM, &action, &previous_term_);
    ::sigaction(SIGINT, &action, &previous_int_);
  }
  ~StreamStopSignals() {
    ::sigaction(SIGTERM, &previous_term_, nullptr);
    ::sigaction(SIGINT, &previous_int_, nullptr);
  }
  StreamStopSignals(const StreamStopSignals&) = delete;
  StreamStopSignals& operator=(const StreamStopSignals&) = delete;

  int requested() const { return stream_stop_signal; }

 private:
  struct sigaction previous_term_ {};
  struct sigaction previous_int_ {};
};

/// Records the cursor of a durable write: with `ledger`, together with the partitions' new
/// positions, and a write that another member's claim fenced is rolled back before failing.
Status RecordStreamCursor(Backend& backend, MemberLedger* ledger, const DestinationCursor& cursor,
                          const SourceIteration& iteration, const Value& recorded_state) {
  if (ledger == nullptr) {
    return backend.CreateDestinationCursor(cursor).WithFailureClass(FailureClass::kBackend);
  }
  Status recorded = ledger->Record(cursor, iteration);
  if (recorded.code() != StatusCode::kAborted) {
    return recorded.WithFailureClass(FailureClass::kBackend);
  }
  // A rebalance gave a partition of this write to another member while it ran (this process was
  // too slow for the group): its rows would be written twice. Undo the write, then stop.
  Status undone = ledger->RollBackOwn(cursor.job_id, recorded_state);
  return Status(StatusCode::kAborted,
                fmt::format("{}; {}", recorded.message(),
                            undone.ok() ? "the write was rolled back and the member stops"
                                        : "rolling the write back failed too (it is rolled back "
                                          "when this member restarts): " +
                                              undone.message()),
                FailureClass::kSource);
}

ReturnStatus RunInline(Source& source, Destination& destination, Backend& backend,
                       const PipelineSettings& settings, const JobPlan& plan,
                       TransformChain* transforms, MemberLedger* ledger, Status& error) {
  Status opened = destination.Open(plan.destination_state);
  if (!opened.ok()) {
    error = opened.WithFailureClass(FailureClass::kDestination);
    return ReturnStatus::kDestinationError;
  }
  if (plan.source_exhausted) return ReturnStatus::kSuccess;
  int64_t iteration = plan.start_iteration;
  Value pagination = plan.start_pagination;
  int64_t written = 0;
  // Carried into every cursor, empty pages included: a resume hands the last cursor's state to
  // Open(), and a cursor without one would make it discard committed rows.
  Value state = plan.destination_state;
  std::string label = settings.key.source_name + "." + settings.key.stream_name;
  StreamStopSignals stop_signals;
  // The ledger lives only as long as this run; the source outlives it (its consumer, closed
  // later, revokes the partitions once more).
  struct OwnerScope {
    Source& source;
    ~OwnerScope() { source.SetPartitionOwner(nullptr); }
  } owner_scope{source};
  if (ledger != nullptr) source.SetPartitionOwner(ledger);
  // As in the producer, max_iterations caps this run (iterations 0..N), not the job.
  while (settings.max_iterations == 0 ||
         iteration - plan.start_iteration <= settings.max_iterations) {
    int64_t extracted_at = NowMicros();
    auto fetched = source.Get(pagination);
    if (!fetched) {
      error = fetched.error().WithFailureClass(FailureClass::kSource);
      return ReturnStatus::kSourceError;
    }
    bool last = fetched->IsLast();
    fetched->records.SetExtractedAt(extracted_at);
    bool iteration_failed = true;
    ScopedIterationSpan span(iteration, extracted_at, fetched->records, iteration_failed);
    DurableTally tally;
    if (transforms != nullptr && !fetched->records.empty()) {
      if (Status applied = transforms->Apply(fetched->records); !applied.ok()) {
        spdlog::error("{}", applied.message());
        error = applied.WithFailureClass(FailureClass::kTransform);
        return ReturnStatus::kTransformError;
      }
    }
    Value recorded_state = state;
    if (!fetched->records.empty()) {
      tally.Add(fetched->records);
      auto wrote = destination.Write(fetched->records, NowMicros());
      if (!wrote) {
        error = wrote.error().WithFailureClass(FailureClass::kDestination);
        return ReturnStatus::kDestinationError;
      }
      state = std::move(*wrote);
    }
    DestinationCursor cursor{
        .job_id = plan.job.id,
        .key = settings.key,
        .destination_name = settings.destination_name,
        .from_source_iteration = iteration,
        .to_source_iteration = iteration,
        .rows_written = static_cast<int64_t>(fetched->records.size()),
        .success = true,
        .pagination =
            last ? std::nullopt : std::optional<std::string>(fetched->next_pagination.ToJson()),
        .destination_state =
            state.is_null() ? std::nullopt : std::optional<std::string>(state.ToJson())};
    if (Status recorded = RecordStreamCursor(backend, ledger, cursor, *fetched, recorded_state);
        !recorded.ok()) {
      error = recorded;
      return recorded.failure_class() == FailureClass::kSource ? ReturnStatus::kSourceError
                                                               : ReturnStatus::kBackendError;
    }
    Status committed = source.Commit(fetched->next_pagination);
    if (!committed.ok()) {
      error = committed.WithFailureClass(FailureClass::kSource);
      return ReturnStatus::kSourceError;
    }
    tally.Report(NowMicros());
    CurrentMonitor().PipelineStatus(ToString(ReturnStatus::kSuccess));  // As the original: each.
    iteration_failed = false;
    written += static_cast<int64_t>(fetched->records.size());
    if (last) {
      spdlog::info("Stream {} caught up after {} records", label, written);
      break;
    }
    if (int signal_number = stop_signals.requested(); signal_number != 0) {
      spdlog::info("Stream {}: stopping on signal {} after the batch in hand", label,
                   signal_number);
      break;
    }
    if (fetched->records.empty()) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      if (stop_signals.requested() != 0) {
        spdlog::info("Stream {}: stopping on signal {}", label, stop_signals.requested());
        break;
      }
    }
    pagination = std::move(fetched->next_pagination);
    ++iteration;
  }
  spdlog::info("Stream {}: wrote {} records this run", label, written);
  return ReturnStatus::kSuccess;
}

/// A member's new job starts where the stream's job of a run before members stopped, if one
/// is still running: its last cursor's pagination.
Status SeedFromPipelineJob(Backend& backend, const StreamKey& pipeline_key, JobPlan& plan) {
  BIZON_ASSIGN_OR_RETURN(std::optional<StreamJob> earlier,
                         backend.GetRunningStreamJob(pipeline_key));
  if (!earlier) return Status::Ok();
  BIZON_ASSIGN_OR_RETURN(std::optional<DestinationCursor> last,
                         backend.GetLastDestinationCursor(earlier->id));
  if (!last || !last->pagination) return Status::Ok();
  BIZON_ASSIGN_OR_RETURN(plan.start_pagination, Value::FromJson(*last->pagination));
  spdlog::info("Starting from the positions of job {}, which ran before members", earlier->id);
  return Status::Ok();
}

/// The monitor the `monitoring` block (or the OTEL_* variables) asks for; none when it cannot
/// start: monitoring must not fail a run.
std::unique_ptr<Monitor> StartMonitor(const LoadedConfig& config,
                                      const PipelineSettings& settings) {
  MonitorIdentity identity{
      .pipeline_name = settings.pipeline_name,
      .source_name = settings.key.source_name,
      .stream_name = settings.key.stream_name,
      .destination_name = settings.destination_name,
      .default_destination_id =
          settings.destination_config.is_map()
              ? settings.destination_config.GetString("destination_id", settings.destination_name)
              : settings.destination_name};
  auto monitor = MakeMonitor(config.config.Find("monitoring"), identity);
  if (!monitor) {
    spdlog::warn("Monitoring is off for this run: {}", monitor.error().message());
    return nullptr;
  }
  return std::move(*monitor);
}

/// `--role producer`: no run lock of the consumer's, no InitJob, no destination.
RunOutcome RunProducerSide(const RunParts& parts, Backend& backend,
                           const PipelineSettings& settings, const BrokerQueueConfig& queue,
                           double job_wait_s) {
  auto source_or = MakeSource(parts);
  if (!source_or) return SourceBuildFailure(source_or.error());
  if (Status connected = (*source_or)->CheckConnection(); !connected.ok()) {
    return EarlyFailure(FailureClass::kSource,
                        connected.WithContext("error while connecting to source"));
  }
  ProducerRoleResult produced = RunProducerRole(**source_or, backend, settings, queue, job_wait_s);
  RunOutcome outcome;
  outcome.role = RunRole::kProducer;
  outcome.job_id = produced.job_id;
  outcome.producer = produced.producer.status;
  outcome.records_published = produced.records_published;
  outcome.success = produced.producer.status == ReturnStatus::kSuccess;
  if (!outcome.success) {
    outcome.failure_class = ClassOf(produced.producer.status);
    NoteError(outcome, produced.producer.error);
    spdlog::error("{}", outcome.StatusText());
  }
  return outcome;
}

}  // namespace

RunOutcome RunPipeline(const LoadedConfig& config, const ConnectorRegistry& registry,
                       const RunOptions& options) {
  auto settings_or = ReadSettings(config);
  if (!settings_or) return EarlyFailure(FailureClass::kConfig, settings_or.error());
  const PipelineSettings& settings = *settings_or;

  RunParts parts;
  parts.python_source_path = settings.source_config.GetString("source_file_path");
  parts.python_options.call_timeout = settings.python_timeout;
  parts.transforms = config.config.Find("transforms");
  parts.source_descriptor = registry.FindSource(settings.key.source_name);
  parts.destination_descriptor = registry.FindDestination(settings.destination_name);
  std::vector<StreamSpec> streams;
  if (!parts.python_source_path.empty()) {
    auto info = InspectPythonSource(parts.python_source_path, settings.key.source_name);
    if (!info) return EarlyFailure(FailureClass::kConfig, info.error());
    streams = info->streams;
    bool known = false;
    std::string available;
    for (const StreamSpec& stream : streams) {
      known |= stream.name == settings.key.stream_name;
      available += fmt::format("{}'{}'", available.empty() ? "" : ", ", stream.name);
    }
    if (!known) {
      return EarlyFailure(
          FailureClass::kConfig,
          InvalidArgumentError(fmt::format(
              "{}: source.stream: Stream {} not found. Available streams are [{}] "
              "(custom source {})",
              config.file_name, settings.key.stream_name, available, parts.python_source_path)));
    }
  } else if (parts.source_descriptor == nullptr || !parts.source_descriptor->factory) {
    return EarlyFailure(FailureClass::kConfig,
                        InvalidArgumentError(
                            fmt::format("source '{}' is declared but not implemented in this build",
                                        settings.key.source_name)));
  } else {
    streams = parts.source_descriptor->streams;
  }
  if (parts.destination_descriptor == nullptr || !parts.destination_descriptor->factory) {
    return EarlyFailure(FailureClass::kConfig,
                        InvalidArgumentError(fmt::format(
                            "destination '{}' is declared but not implemented in this build",
                            settings.destination_name)));
  }
  // Compiled once by the caller, when it checked them (engine/embedded_python.h).
  std::shared_ptr<TransformChain> transforms = options.transforms;
  if (settings.has_transforms && transforms == nullptr) {
    return EarlyFailure(FailureClass::kUnknown,
                        InternalError("the run was started without its compiled transforms"));
  }
  if (settings.sync_mode == SyncMode::kIncremental) {
    for (const StreamSpec& stream : streams) {
      if (stream.name == settings.key.stream_name && !stream.supports_incremental) {
        return EarlyFailure(
            FailureClass::kConfig,
            InvalidArgumentError(fmt::format(
                "{}: source.sync_mode: stream '{}' of source '{}' does not support incremental "
                "sync; use full_refresh (see `bizon stream list {}`)",
                config.file_name, settings.key.stream_name, settings.key.source_name,
                settings.key.source_name)));
      }
    }
  }
  std::string runner = settings.runner;
  if (runner == "process" && !parts.python_source_path.empty()) {
    // The embedded interpreter is started in this process, and a forked child must not use it.
    spdlog::warn(
        "The process runner cannot run a custom Python source in a forked producer; "
        "using the thread runner");
    runner = "thread";
  }

  // A kafka or rabbitmq queue; nullopt for the in-process one.
  const Value* queue_block = config.config.FindPath("engine.queue");
  std::optional<BrokerQueueConfig> broker =
      queue_block != nullptr ? ReadBrokerQueueConfig(*queue_block) : std::nullopt;
  if (Status role = CheckRole(options.role, config.file_name, config.config, settings, runner);
      !role.ok()) {
    return EarlyFailure(FailureClass::kConfig, role);
  }

  auto backend_or = OpenBackend(settings.backend_config);
  if (!backend_or) return EarlyFailure(FailureClass::kBackend, backend_or.error());
  Backend& backend = **backend_or;
  parts.source_context = {.pipeline_name = settings.key.name,
                          .stream = settings.key.stream_name,
                          .sync_mode = settings.sync_mode,
                          .config = settings.source_config};
  if (options.role == RunRole::kProducer) {
    return RunProducerSide(parts, backend, settings, *broker, options.job_wait_s);
  }
  auto source_or = MakeSource(parts);
  if (!source_or) return SourceBuildFailure(source_or.error());
  Source& source = **source_or;
  // Several processes may read a partitioned stream together, each as a member with its own
  // job (engine/members.h); other pipelines run one process at a time.
  std::string member = source.MemberId();
  bool as_member = runner == "stream" && settings.sync_mode == SyncMode::kStream &&
                   !member.empty() && backend.HasPartitionLedger() &&
                   parts.destination_descriptor->concurrent_members;
  PipelineSettings run_settings = settings;
  if (as_member) {
    run_settings.key = MemberKey(settings.key, member);
    spdlog::info(
        "Running as member {} of pipeline '{}': other processes of it may share the "
        "stream's partitions",
        member, settings.key.name);
  }
  auto lock = AcquireRunLocks(settings.backend_config, backend, run_settings.key);
  if (!lock) return EarlyFailure(FailureClass::kBackend, lock.error());
  if (Status connected = source.CheckConnection(); !connected.ok()) {
    return EarlyFailure(FailureClass::kSource,
                        connected.WithContext("error while connecting to source"));
  }

  // With a network queue, an interrupted full refresh resumes: the queue still holds its
  // iterations and its producer may still be running.
  bool through_broker = broker.has_value() && runner != "stream";
  auto plan_or = InitJob(backend, run_settings, source, lock->exclusive, through_broker);
  if (!plan_or) return EarlyFailure(FailureClass::kBackend, plan_or.error());
  JobPlan& plan = *plan_or;
  if (as_member && !plan.resumed) {
    // A member's first run: positions the ledger lacks come from the stream's job of a run
    // before members (the ledger's own win at each claim).
    if (Status seeded = SeedFromPipelineJob(backend, settings.key, plan); !seeded.ok()) {
      return EarlyFailure(FailureClass::kBackend, seeded);
    }
  }

  SyncMetadata sync{.name = settings.key.name,
                    .job_id = plan.job.id,
                    .source_name = settings.key.source_name,
                    .stream_name = settings.key.stream_name,
                    .sync_mode = plan.MaterializationMode(settings.sync_mode),
                    .destination_name = settings.destination_name,
                    .reset = plan.is_reset};
  parts.destination_context = {
      .sync = sync,
      .config = settings.destination_config,
      .job_abandoned = [&backend](const std::string& job_id) -> Result<bool> {
        // Called while this run's new job exists, so an unfinished earlier one is abandoned.
        BIZON_ASSIGN_OR_RETURN(std::optional<StreamJob> job, backend.GetStreamJobById(job_id));
        return job.has_value() && job->status != JobStatus::kSucceeded;
      }};
  RunOutcome outcome;
  outcome.job_id = plan.job.id;
  outcome.role = options.role;
  auto destination_or = parts.destination_descriptor->factory(parts.destination_context);
  if (!destination_or) {
    RecordJobFailure(backend, settings, plan, destination_or.error().message());
    RunOutcome failed = EarlyFailure(FailureClass::kDestination, destination_or.error());
    failed.job_id = plan.job.id;
    return failed;
  }
  Destination& destination = **destination_or;
  ScopedMonitor monitor(StartMonitor(config, settings));

  if (runner == "stream") {
    std::optional<MemberLedger> ledger;
    if (as_member) {
      ledger.emplace(backend, settings, member,
                     [&parts](const std::string& job_id, const Value& state) -> Status {
                       // Opening a job's destination with its last recorded state discards what
                       // it wrote after it, as a resume does.
                       DestinationContext context = parts.destination_context;
                       context.sync.job_id = job_id;
                       BIZON_ASSIGN_OR_RETURN(std::unique_ptr<Destination> other,
                                              parts.destination_descriptor->factory(context));
                       return other->Open(state);
                     });
    }
    Status error;
    ReturnStatus status = RunInline(source, destination, backend, run_settings, plan,
                                    transforms.get(), ledger ? &*ledger : nullptr, error);
    if (status != ReturnStatus::kSuccess) monitor.get().PipelineStatus(ToString(status));
    outcome.stream = status;
    outcome.success = status == ReturnStatus::kSuccess;
    if (outcome.success) {
      backend.SetJobOwner(plan.job.id, "").IgnoreError();  // Stream jobs stay running.
    } else {
      outcome.failure_class = ClassOf(status);
      NoteError(outcome, error);
      RecordJobFailure(backend, settings, plan, error.message());
    }
  } else {
    SidesResult sides;
    monitor.get().PipelineStatus(ToString(ReturnStatus::kRunning));
    if (through_broker) {
      BrokeredSides brokered = RunThroughBroker(options.role, source, destination, backend,
                                                settings, plan, *broker, transforms.get());
      sides.consumer = brokered.consumer;
      // The consumer role knows the producer's status only from an error termination.
      sides.producer = brokered.producer.value_or(
          ProducerResult{brokered.consumer.producer_status.value_or(ReturnStatus::kSuccess),
                         brokered.consumer.error});
    } else if (runner == "process") {
      sides = RunInProcesses(parts, destination, backend, settings, plan, transforms.get());
    } else {
      sides = RunThreaded(source, destination, backend, settings, plan, transforms.get());
    }
    monitor.get().PipelineStatus(ToString(sides.consumer.status));
    outcome.producer = sides.producer.status;
    outcome.consumer = sides.consumer.status;
    outcome.success = sides.producer.status == ReturnStatus::kSuccess &&
                      sides.consumer.status == ReturnStatus::kSuccess;
    if (!outcome.success) {
      // The real error wins over "killed": a stopped producer beside a failed consumer is the
      // consumer's failure.
      ReturnStatus blamed = sides.consumer.status;
      if (blamed == ReturnStatus::kSuccess || blamed == ReturnStatus::kKilledByRunner) {
        blamed = sides.producer.status;
      }
      outcome.failure_class = ClassOf(blamed);
      NoteError(outcome, sides.producer.status != ReturnStatus::kSuccess &&
                                 sides.producer.status != ReturnStatus::kKilledByRunner
                             ? sides.producer.error
                             : sides.consumer.error);
      NoteError(outcome, sides.consumer.error);
      RecordJobFailure(backend, settings, plan, outcome.error);
    }
    if (options.role == RunRole::kConsumer && !sides.consumer.producer_status) {
      outcome.producer.reset();
    }
  }
  auto written = backend.GetWrittenRowCount(plan.job.id);
  if (written) outcome.records_written = *written;
  if (!outcome.success) spdlog::error("{}", outcome.StatusText());
  return outcome;
}

}  // namespace bizon
