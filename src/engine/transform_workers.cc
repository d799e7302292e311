#include "engine/transform_workers.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/frame_io.h"
#include "python/python_runtime.h"
#include "python/python_transforms.h"

namespace bizon {
namespace {

// Replies start with one tag byte.
constexpr char kReplyOk = 'O';
constexpr char kReplyError = 'E';

struct Worker {
  pid_t pid = -1;
  int input = -1;   // We write batches here (the worker's stdin).
  int output = -1;  // We read results here (the worker's stdout).
};

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Starts `bizon __transform-worker` with its stdin and stdout on two new pipes.
Result<Worker> SpawnWorker(int index) {
  int to_worker[2];
  int from_worker[2];
  if (::pipe2(to_worker, O_CLOEXEC) != 0) {
    return Fail(UnavailableError(fmt::format("cannot create a pipe for transform worker {}: {}",
                                             index, std::strerror(errno))));
  }
  if (::pipe2(from_worker, O_CLOEXEC) != 0) {
    int saved = errno;
    ::close(to_worker[0]);
    ::close(to_worker[1]);
    return Fail(UnavailableError(fmt::format("cannot create a pipe for transform worker {}: {}",
                                             index, std::strerror(saved))));
  }
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  static const char kExecutable[] = "/proc/self/exe";
  char name[] = "bizon";
  char command[] = "__transform-worker";
  char* argv[] = {name, command, nullptr};
  pid_t parent = ::getpid();
  pid_t child = ::fork();
  if (child == 0) {
    // A worker must not outlive the run: it would keep the machine busy for nothing.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(to_worker[0], STDIN_FILENO);
    ::dup2(from_worker[1], STDOUT_FILENO);
    ::execv(kExecutable, argv);
    ::_exit(127);
  }
  int saved = errno;
  ::close(to_worker[0]);
  ::close(from_worker[1]);
  if (child < 0) {
    ::close(to_worker[1]);
    ::close(from_worker[0]);
    return Fail(UnavailableError(
        fmt::format("cannot start transform worker {}: {}", index, std::strerror(saved))));
  }
  return Worker{.pid = child, .input = to_worker[1], .output = from_worker[0]};
}

// Why a worker's output ended: reaps it and describes its exit.
std::string DescribeExit(Worker& worker, int index) {
  int wait_status = 0;
  pid_t reaped = 0;
  while ((reaped = ::waitpid(worker.pid, &wait_status, 0)) < 0 && errno == EINTR) {
  }
  pid_t pid = worker.pid;
  worker.pid = -1;
  if (reaped != pid) return fmt::format("transform worker {} (pid {}) stopped", index, pid);
  if (WIFSIGNALED(wait_status)) {
    return fmt::format("transform worker {} (pid {}) was killed by signal {} ({})", index, pid,
                       WTERMSIG(wait_status), strsignal(WTERMSIG(wait_status)));
  }
  return fmt::format("transform worker {} (pid {}) exited with code {}", index, pid,
                     WEXITSTATUS(wait_status));
}

Status TransformFailure(std::string message) {
  return Status(StatusCode::kAborted, std::move(message), FailureClass::kTransform);
}

}  // namespace

struct TransformWorkers::State {
  MessageSource* upstream = nullptr;
  std::vector<Worker> workers;
  size_t capacity = 0;  // Batches in flight, in all workers together.

  // One entry per upstream message, in arrival order: either ready (a message that needs no
  // transform, or an upstream error), or a batch that `worker` is transforming.
  struct Slot {
    int worker = -1;
    std::optional<QueueMessage> message;
    Status error;
  };
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Slot> slots;
  size_t in_flight = 0;
  bool stop = false;
  bool feeder_done = false;
  std::thread feeder;

  void Push(Slot slot) {
    std::lock_guard lock(mutex);
    if (slot.worker >= 0) ++in_flight;
    slots.push_back(std::move(slot));
    changed.notify_all();
  }

  void Feed() {
    size_t next_worker = 0;
    while (true) {
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return stop || in_flight < capacity; });
        if (stop) break;
      }
      auto next = upstream->Next(std::chrono::milliseconds(200));
      if (!next) {
        Push({.error = next.error()});
        break;
      }
      if (!next->has_value()) continue;
      QueueMessage& message = **next;
      if (message.kind != QueueMessage::Kind::kData || message.records.empty()) {
        bool last = message.kind != QueueMessage::Kind::kData;
        Push({.message = std::move(message)});
        if (last) break;
        continue;
      }
      int index = static_cast<int>(next_worker);
      next_worker = (next_worker + 1) % workers.size();
      Status sent = WriteFrame(workers[static_cast<size_t>(index)].input, EncodeMessage(message));
      if (!sent.ok()) {
        // The worker died; its reader will report how when it reaches this batch.
        Push({.worker = index});
        break;
      }
      Push({.worker = index});
    }
    std::lock_guard lock(mutex);
    feeder_done = true;
    changed.notify_all();
  }
};

TransformWorkers::TransformWorkers(std::unique_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<TransformWorkers>> TransformWorkers::Start(const Value& transforms,
                                                                  TransformWorkerOptions options,
                                                                  MessageSource& upstream) {
  ::signal(SIGPIPE, SIG_IGN);  // A dead worker must give EPIPE, not kill the run.
  auto state = std::make_unique<State>();
  state->upstream = &upstream;
  int count = std::max(options.workers, 1);
  state->capacity = 2 * static_cast<size_t>(count);
  Value setup = Value::EmptyMap();
  setup.Set("transforms", transforms);
  setup.Set("record_timeout_ms", static_cast<int64_t>(options.record_timeout.count()));
  // The worker's interpreter imports from the same virtualenv as ours: VIRTUAL_ENV and
  // PYTHONPATH reach it through the environment, the config's python_env through this.
  setup.Set("python_env", ConfiguredPythonEnvironment());
  std::string setup_json = setup.ToJson();
  // Built before any worker exists, so a failure part-way stops the ones already started.
  std::unique_ptr<TransformWorkers> pool(new TransformWorkers(std::move(state)));
  for (int i = 0; i < count; ++i) {
    BIZON_ASSIGN_OR_RETURN(Worker worker, SpawnWorker(i + 1));
    pool->state_->workers.push_back(worker);
    BIZON_RETURN_IF_ERROR(WriteFrame(worker.input, setup_json));
  }
  spdlog::info("Transforms run in {} worker processes; batches keep their source order", count);
  State* raw = pool->state_.get();
  raw->feeder = std::thread([raw] { raw->Feed(); });
  return pool;
}

TransformWorkers::~TransformWorkers() {
  State& state = *state_;
  bool finished;
  {
    std::lock_guard lock(state.mutex);
    state.stop = true;
    // Complete: every batch was handed out and every result read.
    finished = state.feeder_done && state.in_flight == 0;
    state.changed.notify_all();
  }
  // A feeder still running may be blocked writing to a busy worker, and a batch still in a
  // worker is one whose result nobody will read (the consumer stopped early): stopping the
  // workers unblocks the feeder (the write fails) and spares waiting for those batches. After a
  // complete run the workers just see the end of their input.
  if (!finished) {
    for (Worker& worker : state.workers) {
      if (worker.pid > 0) ::kill(worker.pid, SIGKILL);
    }
  }
  if (state.feeder.joinable()) state.feeder.join();
  for (Worker& worker : state.workers) CloseFd(worker.input);
  for (Worker& worker : state.workers) {
    CloseFd(worker.output);
    if (worker.pid > 0) {
      int wait_status = 0;
      while (::waitpid(worker.pid, &wait_status, 0) < 0 && errno == EINTR) {
      }
    }
  }
}

Result<std::optional<QueueMessage>> TransformWorkers::Next(std::chrono::milliseconds timeout) {
  State& state = *state_;
  int worker_index = -1;
  {
    std::unique_lock lock(state.mutex);
    if (!state.changed.wait_for(lock, timeout, [&] { return !state.slots.empty(); })) {
      return std::optional<QueueMessage>();
    }
    State::Slot& front = state.slots.front();
    if (front.worker < 0) {
      State::Slot slot = std::move(front);
      state.slots.pop_front();
      if (!slot.error.ok()) return Fail(slot.error);
      return std::move(slot.message);
    }
    worker_index = front.worker;
  }
  Worker& worker = state.workers[static_cast<size_t>(worker_index)];
  if (!WaitReadable(worker.output, static_cast<int>(timeout.count()))) {
    return std::optional<QueueMessage>();
  }
  auto reply = ReadFrame(worker.output);
  if (!reply || !reply->has_value()) {
    return Fail(TransformFailure(fmt::format("{} while transforming a batch; nothing was published",
                                             DescribeExit(worker, worker_index + 1))));
  }
  std::string& bytes = **reply;
  {
    std::lock_guard lock(state.mutex);
    state.slots.pop_front();
    --state.in_flight;
    state.changed.notify_all();
  }
  if (bytes.empty() || bytes[0] != kReplyOk) {
    std::string text = bytes.empty() ? std::string("an empty reply") : bytes.substr(1);
    return Fail(TransformFailure(std::move(text)));
  }
  BIZON_ASSIGN_OR_RETURN(QueueMessage message, DecodeMessage(std::string_view(bytes).substr(1)));
  return std::optional<QueueMessage>(std::move(message));
}

int RunTransformWorker() {
  auto reply = [](char tag, std::string_view body) {
    std::string bytes(1, tag);
    bytes.append(body);
    return WriteFrame(STDOUT_FILENO, bytes).ok();
  };
  auto setup_bytes = ReadFrame(STDIN_FILENO);
  if (!setup_bytes || !setup_bytes->has_value()) return 0;  // The run ended before we began.
  auto setup = Value::FromJson(**setup_bytes);
  if (!setup) {
    reply(kReplyError, "transform worker: unreadable setup: " + setup.error().message());
    return 1;
  }
  if (Status used = UsePythonEnvironment(setup->GetString("python_env"),
                                         "transform worker: engine.runner.config.python_env");
      !used.ok()) {
    reply(kReplyError, used.message());
    return 1;
  }
  TransformOptions options;
  options.record_timeout = std::chrono::milliseconds(setup->GetInteger("record_timeout_ms"));
  const Value* transforms = setup->Find("transforms");
  auto chain = TransformChain::Compile(transforms != nullptr ? *transforms : Value(), options);
  if (!chain) {
    reply(kReplyError, chain.error().message());
    return 1;
  }
  while (true) {
    auto frame = ReadFrame(STDIN_FILENO);
    if (!frame) return 1;
    if (!frame->has_value()) return 0;  // Clean end of the run.
    auto message = DecodeMessage(**frame);
    if (!message) {
      reply(kReplyError, "transform worker: " + message.error().message());
      return 1;
    }
    if (Status applied = (*chain)->Apply(message->records); !applied.ok()) {
      reply(kReplyError, applied.message());
      return 0;
    }
    if (!reply(kReplyOk, EncodeMessage(*message))) return 1;
  }
}

}  // namespace bizon
