// The process runner: the producer in a forked process with its own source instance and backend
// connection, frames over a pipe to the consumer here, and transforms in worker processes so
// that they use more than one core. A socket back to the producer carries what the consumer
// recorded, so the producer's source is acknowledged from its own process.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "engine/backend/backend_factory.h"
#include "engine/frame_io.h"
#include "engine/runner/runner.h"
#include "engine/transform_workers.h"
#include "python/python_transforms.h"

namespace bizon {
namespace {

// The pipe's capacity plus one message in flight bounds memory; a full pipe blocks the producer.
class PipeSink final : public MessageSink {
 public:
  explicit PipeSink(int fd) : fd_(fd) {}
  Status Push(QueueMessage message) override {
    return WriteFrame(fd_, EncodeMessage(message)).WithFailureClass(FailureClass::kKilled);
  }

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
                         FailureClass::kQueue));
    }
    BIZON_ASSIGN_OR_RETURN(QueueMessage message, DecodeMessage(**frame));
    return std::optional<QueueMessage>(std::move(message));
  }

 private:
  int fd_;
};

// The acknowledgement channel: one frame per recorded cursor (its pagination as JSON), then an
// empty frame when the consumer finished successfully.
constexpr std::string_view kRunSucceeded;

/// Sends one frame without raising SIGPIPE when the producer is gone.
Status SendAck(int fd, std::string_view bytes) {
  uint64_t size = bytes.size();
  std::string frame(reinterpret_cast<const char*>(&size), sizeof size);
  frame.append(bytes);
  size_t sent = 0;
  while (sent < frame.size()) {
    ssize_t n = ::send(fd, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return UnavailableError(std::strerror(errno));
    sent += static_cast<size_t>(n);
  }
  return Status::Ok();
}

/// A failed producer's exit code: its failure class, never 0.
int ExitCodeOf(const Status& status) {
  if (status.ok()) return 0;
  return static_cast<int>(status.failure_class() == FailureClass::kNone ? FailureClass::kSource
                                                                        : status.failure_class());
}

/// The producer process; never returns. Exits with its failure class (0: success).
[[noreturn]] void ProduceInChild(const RunContext& context, int data_fd, int ack_fd) {
  const PipelineSettings& settings = context.settings;
  PipeSink sink(data_fd);
  auto fail = [&](const Status& error) {
    QueueMessage failed{.kind = QueueMessage::Kind::kErrorTermination, .error = error};
    sink.Push(std::move(failed)).IgnoreError();  // Ignored: the exit code says it too.
    ::_exit(ExitCodeOf(error));
  };
  // An in-memory backend lives in the parent's memory. Source cursors are progress notes that
  // recovery never reads, so the child goes without rather than writing them somewhere else.
  std::unique_ptr<Backend> producer_backend;
  if (!IsProcessLocal(settings.backend_config)) {
    auto opened = OpenBackend(settings.backend_config);
    if (!opened) fail(opened.error().WithFailureClass(FailureClass::kBackend));
    producer_backend = std::move(*opened);
  }
  auto source = context.make_source();
  if (!source) fail(source.error().WithFailureClass(FailureClass::kSource));
  Acknowledgements acks;
  bool run_succeeded = false;
  std::thread reader([&] {
    while (true) {
      auto frame = ReadFrame(ack_fd);
      if (!frame || !frame->has_value()) return;  // The consumer ended.
      if (**frame == kRunSucceeded) {
        run_succeeded = true;
        continue;
      }
      if (auto pagination = Value::FromJson(**frame)) acks.Post(*pagination);
    }
  });
  std::atomic<bool> stop{false};
  ProducerResult produced =
      RunProducer(**source, producer_backend.get(), settings, context.plan, sink, stop, &acks);
  ::close(data_fd);
  reader.join();
  if (run_succeeded) AcknowledgeLast(**source, acks, settings, {});
  std::fflush(nullptr);
  ::_exit(ExitCodeOf(produced.error));
}

/// The producer's result from how its process ended.
ProducerResult Reaped(int wait_status, bool stopped) {
  if (WIFEXITED(wait_status)) {
    // The child exits with its failure class; anything else (a sanitizer report, a crash
    // handler) is a failed source.
    int code = WEXITSTATUS(wait_status);
    if (code == 0) return {};
    bool known = code > 0 && code <= static_cast<int>(FailureClass::kUnknown);
    return {Status(StatusCode::kAborted,
                   fmt::format("the producer process exited with code {}", code),
                   known ? static_cast<FailureClass>(code) : FailureClass::kSource)};
  }
  int signal_number = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
  return {Status(StatusCode::kAborted,
                 fmt::format("the producer process was killed by signal {}", signal_number),
                 stopped ? FailureClass::kKilled : FailureClass::kSource)};
}

class ProcessRunner final : public Runner {
 public:
  RunnerResult Run(const RunContext& context) override {
    RunnerResult result;
    int data[2];
    int acks[2];
    if (::pipe2(data, O_CLOEXEC) != 0) return Unstarted("create the producer pipe");
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, acks) != 0) {
      ::close(data[0]);
      ::close(data[1]);
      return Unstarted("create the acknowledgement socket");
    }
    std::fflush(nullptr);
    pid_t parent = ::getpid();
    pid_t child = ::fork();
    if (child == 0) {
      // It must not outlive the parent: an orphan would keep fetching, and it holds the run
      // lock it inherited, so a rerun after the parent was killed would be refused.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(static_cast<int>(FailureClass::kKilled));
      ::close(data[0]);
      ::close(acks[0]);
      ::signal(SIGPIPE, SIG_IGN);
      ProduceInChild(context, data[1], acks[1]);
    }
    ::close(data[1]);
    ::close(acks[1]);
    if (child < 0) {
      ::close(data[0]);
      ::close(acks[0]);
      return Unstarted("start the producer process");
    }
    result.consumer = Consume(context, data[0], acks[0]);
    // Stop the producer only when the consumer failed on its own; after an error termination
    // the producer is already exiting with its status, which a SIGTERM would race and hide.
    bool stopped =
        !result.consumer->ok() && !result.consumer->upstream && ::kill(child, SIGTERM) == 0;
    if (result.consumer->ok()) {
      // Ignored: a producer already gone only leaves its source's bookmark behind.
      SendAck(acks[0], kRunSucceeded).IgnoreError();
    }
    ::close(acks[0]);
    ::close(data[0]);
    int wait_status = 0;
    while (::waitpid(child, &wait_status, 0) < 0 && errno == EINTR) {
    }
    result.producer = result.consumer->upstream ? ProducerResult{result.consumer->error}
                                                : Reaped(wait_status, stopped);
    return result;
  }

 private:
  static RunnerResult Unstarted(std::string_view what) {
    Status error(StatusCode::kUnavailable, fmt::format("cannot {}: {}", what, std::strerror(errno)),
                 FailureClass::kQueue);
    return {.producer = ProducerResult{error}, .consumer = ConsumerResult{.error = error}};
  }

  static ConsumerResult Consume(const RunContext& context, int data_fd, int ack_fd) {
    PipeSource from_producer(data_fd);
    std::atomic<bool> stop{false};
    std::unique_ptr<TransformWorkers> workers;
    if (context.transforms != nullptr && context.transforms->size() > 0) {
      auto started = TransformWorkers::Start(*context.transforms_config,
                                             {.workers = context.settings.transform_workers,
                                              .record_timeout = context.settings.python_timeout},
                                             from_producer);
      if (!started) return {.error = started.error().WithFailureClass(FailureClass::kTransform)};
      workers = std::move(*started);
    }
    MessageSource& messages =
        workers != nullptr ? static_cast<MessageSource&>(*workers) : from_producer;
    return RunConsumer(messages, context.destination, context.backend, context.settings,
                       context.plan, stop, workers != nullptr ? nullptr : context.transforms,
                       {.acknowledge = [ack_fd](const Value& pagination) {
                         // Ignored: a producer already gone only leaves its bookmark behind.
                         SendAck(ack_fd, pagination.ToJson()).IgnoreError();
                         return Status::Ok();
                       }});
  }
};

}  // namespace

std::unique_ptr<Runner> MakeProcessRunner() { return std::make_unique<ProcessRunner>(); }

}  // namespace bizon
