// The stream runner: one loop, no queue. Each iteration is fetched, transformed, written and
// committed before the next fetch, so the source's position and the destination's never drift
// apart by more than one batch.
#include <spdlog/spdlog.h>

#include <csignal>
#include <thread>

#include "bizon/clock.h"
#include "engine/commit_loop.h"
#include "engine/members.h"
#include "engine/runner/runner.h"
#include "monitoring/monitor.h"
#include "python/python_transforms.h"

namespace bizon {
namespace {

// SIGTERM or SIGINT stops the stream after the batch in hand: the batch is written, its cursor
// stored and the source committed, then the run ends successfully with the job left running.
// Without this a `kubectl delete` would kill it mid-batch and the rerun would redo it.
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

class StreamLoop {
 public:
  explicit StreamLoop(const RunContext& context)
      : context_(context),
        label_(context.settings.key.source_name + "." + context.settings.key.stream_name),
        commits_(context.backend, context.destination, context.settings, context.plan, Hooks()) {}

  Status Run();

 private:
  enum class Next { kFetch, kStop };

  CommitLoop::Hooks Hooks();
  /// A member records through its ledger, with the partitions' new positions; a write that
  /// another member's claim fenced is rolled back before failing.
  Status RecordAsMember(const DestinationCursor& cursor);
  /// Fetches, transforms, writes and commits one iteration.
  Result<Next> Step(int64_t iteration, Value& pagination);
  /// After a committed iteration: whether to stop (caught up, or a stop signal).
  Next AfterCommit(const SourceIteration& fetched);

  const RunContext& context_;
  std::string label_;
  CommitLoop commits_;
  StreamStopSignals stop_signals_;
  int64_t written_ = 0;
  bool batch_failed_ = false;  // Read by the batch's span when it ends.
  // The iteration being committed and the destination state before its write: what a member's
  // ledger records and rolls back to.
  const SourceIteration* committing_ = nullptr;
  Value state_before_;
};

CommitLoop::Hooks StreamLoop::Hooks() {
  CommitLoop::Hooks hooks;
  if (context_.ledger != nullptr) {
    hooks.record = [this](const DestinationCursor& cursor) { return RecordAsMember(cursor); };
  }
  hooks.acknowledge = [this](const Value& pagination) {
    return context_.source.Commit(pagination);
  };
  return hooks;
}

Status StreamLoop::RecordAsMember(const DestinationCursor& cursor) {
  MemberLedger& ledger = *context_.ledger;
  Status recorded = ledger.Record(cursor, *committing_);
  if (recorded.code() != StatusCode::kAborted) {
    return recorded.WithFailureClass(FailureClass::kBackend);
  }
  // A rebalance gave a partition of this write to another member while it ran (this process was
  // too slow for the group): its rows would be written twice. Undo the write, then stop.
  Status undone = ledger.RollBackOwn(cursor.job_id, state_before_);
  return Status(StatusCode::kAborted,
                fmt::format("{}; {}", recorded.message(),
                            undone.ok() ? "the write was rolled back and the member stops"
                                        : "rolling the write back failed too (it is rolled back "
                                          "when this member restarts): " +
                                              undone.message()),
                FailureClass::kSource);
}

Result<StreamLoop::Next> StreamLoop::Step(int64_t iteration, Value& pagination) {
  int64_t extracted_at = NowMicros();
  BIZON_ASSIGN_OR_RETURN(SourceIteration fetched, context_.source.Get(pagination));
  bool last = fetched.IsLast();
  fetched.records.SetExtractedAt(extracted_at);
  batch_failed_ = true;
  ScopedIterationSpan span(iteration, extracted_at, fetched.records, batch_failed_);
  DurableTally tally;
  if (context_.transforms != nullptr && !fetched.records.empty()) {
    Status applied = context_.transforms->Apply(fetched.records);
    if (!applied.ok()) spdlog::error("{}", applied.message());
    BIZON_RETURN_IF_ERROR(applied.WithFailureClass(FailureClass::kTransform));
  }
  tally.Add(fetched.records);
  committing_ = &fetched;
  state_before_ = commits_.destination_state();
  Covered covered{.from_iteration = iteration,
                  .to_iteration = iteration,
                  .rows = static_cast<int64_t>(fetched.records.size()),
                  .pagination = fetched.next_pagination,
                  .source_exhausted = last};
  BIZON_RETURN_IF_ERROR(
      fetched.records.empty() ? commits_.CommitEmpty(covered) : commits_.Commit(covered, [&] {
        return context_.destination.Write(fetched.records, NowMicros());
      }));
  tally.Report(NowMicros());
  CurrentMonitor().PipelineStatus("success");  // As the original: after each batch.
  batch_failed_ = false;
  written_ += covered.rows;
  Next next = AfterCommit(fetched);
  pagination = std::move(fetched.next_pagination);
  return next;
}

StreamLoop::Next StreamLoop::AfterCommit(const SourceIteration& fetched) {
  if (fetched.IsLast()) {
    spdlog::info("Stream {} caught up after {} records", label_, written_);
    return Next::kStop;
  }
  if (int signal_number = stop_signals_.requested(); signal_number != 0) {
    spdlog::info("Stream {}: stopping on signal {} after the batch in hand", label_, signal_number);
    return Next::kStop;
  }
  if (fetched.records.empty()) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    if (stop_signals_.requested() != 0) {
      spdlog::info("Stream {}: stopping on signal {}", label_, stop_signals_.requested());
      return Next::kStop;
    }
  }
  return Next::kFetch;
}

Status StreamLoop::Run() {
  const JobPlan& plan = context_.plan;
  BIZON_RETURN_IF_ERROR(context_.destination.Open(plan.destination_state)
                            .WithFailureClass(FailureClass::kDestination));
  if (plan.source_exhausted) return Status::Ok();
  // The ledger lives only as long as this run; the source outlives it (its consumer, closed
  // later, revokes the partitions once more).
  struct OwnerScope {
    Source& source;
    ~OwnerScope() { source.SetPartitionOwner(nullptr); }
  } owner_scope{context_.source};
  if (context_.ledger != nullptr) context_.source.SetPartitionOwner(context_.ledger);
  Value pagination = plan.start_pagination;
  int64_t max_iterations = context_.settings.max_iterations;
  // As in the producer, max_iterations caps this run (iterations 0..N), not the job.
  for (int64_t iteration = plan.start_iteration;
       max_iterations == 0 || iteration - plan.start_iteration <= max_iterations; ++iteration) {
    Result<Next> next = Step(iteration, pagination);
    if (!next) return next.error().WithFailureClass(FailureClass::kSource);
    if (*next == Next::kStop) break;
  }
  spdlog::info("Stream {}: wrote {} records this run", label_, written_);
  return Status::Ok();
}

class StreamRunner final : public Runner {
 public:
  RunnerResult Run(const RunContext& context) override {
    StreamLoop loop(context);
    return {.stream = loop.Run()};
  }
};

}  // namespace

std::unique_ptr<Runner> MakeStreamRunner() { return std::make_unique<StreamRunner>(); }

}  // namespace bizon
