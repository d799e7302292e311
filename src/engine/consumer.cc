#include "engine/consumer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "bizon/clock.h"
#include "engine/progress.h"
#include "monitoring/monitor.h"
#include "python/python_transforms.h"

namespace bizon {
namespace {

/// Returns `on_error(status)` from the enclosing function when `expr` (a Status) is not ok.
#define BIZON_RETURN_IF_ERROR_AS(on_error, expr)                        \
  do {                                                                  \
    ::bizon::Status bizon_status_ = (expr);                             \
    if (!bizon_status_.ok()) return on_error(std::move(bizon_status_)); \
  } while (false)

/// Rows waiting to be written (or, for a destination that appends, written but not yet durable),
/// with the iteration range and pagination they cover.
struct Buffer {
  RecordBatch records;
  /// Rows and payload bytes handed to Destination::Append() since the last Sync().
  int64_t appended_rows = 0;
  int64_t appended_bytes = 0;
  int64_t from_iteration = -1;
  int64_t to_iteration = -1;
  Value pagination = Value::EmptyMap();
  int64_t first_added_us = 0;

  bool empty() const { return from_iteration < 0; }
  void Clear() {
    records.Clear();
    appended_rows = appended_bytes = 0;
    from_iteration = to_iteration = -1;
    pagination = Value::EmptyMap();
    first_added_us = 0;
  }
};

class Consumer {
 public:
  Consumer(Destination& destination, Backend& backend, const PipelineSettings& settings,
           const JobPlan& plan, TransformChain* transforms, CommitLoop::Hooks hooks)
      : destination_(destination),
        backend_(backend),
        settings_(settings),
        plan_(plan),
        commits_(backend, destination, settings, plan, std::move(hooks)),
        progress_(settings.key.source_name + "." + settings.key.stream_name,
                  plan.job.total_records_to_fetch, plan.rows_already_written),
        transforms_(transforms),
        appending_(destination.CanAppend()) {}

  ConsumerResult Run(MessageSource& source, const std::atomic<bool>& stop_requested);

 private:
  bool IsRipe(int64_t now_us) const {
    return settings_.buffer_flush_timeout_s > 0 && !buffer_.empty() &&
           static_cast<double>(now_us - buffer_.first_added_us) / 1e6 >=
               settings_.buffer_flush_timeout_s;
  }
  /// Extends the buffer's iteration range and pagination to `message`.
  void Cover(QueueMessage& message);
  void Add(QueueMessage& message);
  /// Hands the message's records to the destination at once (CanAppend()); Flush() syncs them.
  Status Append(QueueMessage& message);
  Status Flush();
  Status WriteOversized(QueueMessage& message);
  /// After a durable write of `rows`: monitoring and the progress line.
  void Written(int64_t rows);
  /// The normal termination: flush, then publish (or keep the job open for the next run).
  ConsumerResult Terminate(const QueueMessage& message);
  /// Writes, buffers or appends one data message.
  Status Take(QueueMessage& message);
  ConsumerResult Failed(Status error);

  Destination& destination_;
  Backend& backend_;
  const PipelineSettings& settings_;
  const JobPlan& plan_;
  CommitLoop commits_;
  Buffer buffer_;
  Progress progress_;
  int64_t written_ = 0;
  std::optional<Value> last_state_;
  TransformChain* transforms_;  // Null without transforms.
  DurableTally tally_;          // What the next durable point makes durable, for monitoring.
  bool failed_ = false;         // Set by Failed(), read by the iteration's span.
  /// The destination takes rows as they arrive: nothing is held here, buffer_size is the interval
  /// between durable points.
  bool appending_;
};

void Consumer::Cover(QueueMessage& message) {
  tally_.Add(message.records);
  if (buffer_.empty()) {
    buffer_.from_iteration = message.iteration;
    buffer_.first_added_us = NowMicros();
  }
  buffer_.to_iteration = message.iteration;
  buffer_.pagination = std::move(message.next_pagination);
}

void Consumer::Add(QueueMessage& message) {
  Cover(message);
  // The first batch is taken as it is, unless the buffer kept room from earlier flushes: then it
  // is copied in, so the buffer grows once per run rather than once per flush.
  if (buffer_.records.empty() &&
      buffer_.records.payload_buffer().capacity() < message.records.PayloadBytes()) {
    buffer_.records = std::move(message.records);
  } else {
    buffer_.records.AppendRange(message.records, 0, message.records.size());
  }
}

Status Consumer::Append(QueueMessage& message) {
  Cover(message);
  buffer_.appended_rows += static_cast<int64_t>(message.records.size());
  buffer_.appended_bytes += static_cast<int64_t>(message.records.PayloadBytes());
  return destination_.Append(message.records, NowMicros())
      .WithFailureClass(FailureClass::kDestination);
}

void Consumer::Written(int64_t rows) {
  tally_.Report(NowMicros());
  written_ += rows;
  progress_.Update(written_);
}

Status Consumer::Flush() {
  if (buffer_.empty()) return Status::Ok();
  spdlog::debug("Writing in destination {} from source iteration {} to {}",
                settings_.destination_name, buffer_.from_iteration, buffer_.to_iteration);
  int64_t rows = static_cast<int64_t>(appending_ ? buffer_.appended_rows : buffer_.records.size());
  BIZON_RETURN_IF_ERROR(commits_.Commit(
      {.from_iteration = buffer_.from_iteration,
       .to_iteration = buffer_.to_iteration,
       .rows = rows,
       .pagination = buffer_.pagination},
      [&] {
        return appending_ ? destination_.Sync() : destination_.Write(buffer_.records, NowMicros());
      }));
  Written(rows);
  buffer_.Clear();
  return Status::Ok();
}

Status Consumer::WriteOversized(QueueMessage& message) {
  // Write the iteration in buffer-sized chunks, and commit one cursor once all of it is durable:
  // a crash between chunks re-fetches the whole iteration, and the destination discards the
  // partial chunks on resume.
  const RecordBatch& records = message.records;
  tally_.Add(records);
  auto write_chunks = [&]() -> Result<Value> {
    size_t begin = 0;
    Value state;
    while (begin < records.size()) {
      RecordBatch chunk;
      size_t bytes = 0;
      size_t end = begin;
      while (end < records.size() &&
             (end == begin ||
              bytes + records.payload(end).size() <= static_cast<size_t>(settings_.buffer_bytes))) {
        bytes += records.payload(end).size();
        ++end;
      }
      chunk.AppendRange(records, begin, end);
      BIZON_ASSIGN_OR_RETURN(state, destination_.Write(chunk, NowMicros()));
      begin = end;
    }
    return state;
  };
  int64_t rows = static_cast<int64_t>(records.size());
  BIZON_RETURN_IF_ERROR(commits_.Commit({.from_iteration = message.iteration,
                                         .to_iteration = message.iteration,
                                         .rows = rows,
                                         .pagination = message.next_pagination},
                                        write_chunks));
  Written(rows);
  return Status::Ok();
}

ConsumerResult Consumer::Failed(Status error) {
  spdlog::error("Consumer stopped: {}", error.message());
  failed_ = true;
  progress_.Finish(false);
  return {.error = std::move(error)};
}

ConsumerResult Consumer::Terminate(const QueueMessage& message) {
  BIZON_RETURN_IF_ERROR_AS(Failed, Flush());
  if (!message.source_exhausted && settings_.sync_mode != SyncMode::kFullRefresh) {
    // Stopped at max_iterations with data left: keep the job open so the next run continues
    // from here instead of moving the watermark past unfetched records.
    BIZON_RETURN_IF_ERROR_AS(
        Failed, backend_.UpdateStreamJobStatus(plan_.job.id, JobStatus::kRunning, std::nullopt)
                    .WithFailureClass(FailureClass::kBackend));
    BIZON_RETURN_IF_ERROR_AS(
        Failed, backend_.SetJobOwner(plan_.job.id, "").WithFailureClass(FailureClass::kBackend));
    spdlog::info("Run capped by max_iterations; the next run continues job {}", plan_.job.id);
    progress_.Finish(true);
    return {};
  }
  if (settings_.sync_mode == SyncMode::kStream) {
    // A bounded stream caught up: the job stays open for the next run.
    BIZON_RETURN_IF_ERROR_AS(
        Failed, backend_.SetJobOwner(plan_.job.id, "").WithFailureClass(FailureClass::kBackend));
    progress_.Finish(true);
    return {};
  }
  BIZON_RETURN_IF_ERROR_AS(Failed,
                           destination_.Finalize().WithFailureClass(FailureClass::kDestination));
  BIZON_RETURN_IF_ERROR_AS(Failed, CompleteJob(backend_, destination_, plan_, last_state_));
  progress_.Finish(true);
  return {};
}

Status Consumer::Take(QueueMessage& message) {
  if (message.records.empty()) {
    // Nothing to write, but the position still moves: an empty page mid-stream must not make
    // a resume fetch it again from an older cursor.
    if (buffer_.empty() && settings_.buffer_bytes == 0) {
      return commits_.CommitEmpty({.from_iteration = message.iteration,
                                   .to_iteration = message.iteration,
                                   .rows = 0,
                                   .pagination = message.next_pagination});
    }
    if (!buffer_.empty()) {
      buffer_.to_iteration = message.iteration;
      buffer_.pagination = std::move(message.next_pagination);
    }
    return Status::Ok();
  }
  int64_t size = static_cast<int64_t>(message.records.PayloadBytes());
  if (appending_) {
    BIZON_RETURN_IF_ERROR(Append(message));
    bool due = settings_.buffer_bytes == 0 || IsRipe(NowMicros()) ||
               buffer_.appended_bytes >= settings_.buffer_bytes;
    return due ? Flush() : Status::Ok();
  }
  if (settings_.buffer_bytes == 0) {
    Add(message);
    return Flush();
  }
  if (size > settings_.buffer_bytes) {
    BIZON_RETURN_IF_ERROR(Flush());
    return WriteOversized(message);
  }
  if (IsRipe(NowMicros()) ||
      static_cast<int64_t>(buffer_.records.PayloadBytes()) + size > settings_.buffer_bytes) {
    BIZON_RETURN_IF_ERROR(Flush());
  }
  Add(message);
  return Status::Ok();
}

ConsumerResult Consumer::Run(MessageSource& source, const std::atomic<bool>& stop_requested) {
  BIZON_RETURN_IF_ERROR_AS(
      Failed,
      destination_.Open(plan_.destination_state).WithFailureClass(FailureClass::kDestination));
  while (true) {
    if (stop_requested.load()) {
      return Failed(CancelledError("the consumer was stopped", FailureClass::kKilled));
    }
    auto next = source.Next(std::chrono::milliseconds(500));
    if (!next) {
      // The channel broke; transform workers report their own failures through it.
      return Failed(next.error().WithFailureClass(FailureClass::kQueue));
    }
    if (!next->has_value()) {
      if (IsRipe(NowMicros())) BIZON_RETURN_IF_ERROR_AS(Failed, Flush());
      continue;
    }
    QueueMessage& message = **next;
    if (message.kind == QueueMessage::Kind::kErrorTermination) {
      // Nothing more is written and nothing is published: the run failed upstream. A producer
      // that named no side failed in its source.
      progress_.Finish(false);
      return {.error = message.error.WithFailureClass(FailureClass::kSource), .upstream = true};
    }
    if (message.kind == QueueMessage::Kind::kTermination) return Terminate(message);
    ScopedIterationSpan span(message.iteration, message.extracted_at_us, message.records, failed_);
    if (transforms_ != nullptr && !message.records.empty()) {
      BIZON_RETURN_IF_ERROR_AS(
          Failed, transforms_->Apply(message.records).WithFailureClass(FailureClass::kTransform));
    }
    if (message.next_state) last_state_ = message.next_state;
    BIZON_RETURN_IF_ERROR_AS(Failed, Take(message));
  }
}

}  // namespace

Status CompleteJob(Backend& backend, Destination& destination, const JobPlan& plan,
                   const std::optional<Value>& last_state) {
  std::optional<std::string> state =
      last_state ? std::optional<std::string>(last_state->ToJson()) : plan.previous_state;
  if (state) {
    BIZON_RETURN_IF_ERROR(
        backend.SetIncrementalState(plan.job.id, *state).WithFailureClass(FailureClass::kBackend));
  }
  BIZON_RETURN_IF_ERROR(
      backend.UpdateStreamJobStatus(plan.job.id, JobStatus::kSucceeded, std::nullopt)
          .WithFailureClass(FailureClass::kBackend));
  return destination.OnJobSucceeded().WithFailureClass(FailureClass::kDestination);
}

ConsumerResult RunConsumer(MessageSource& source, Destination& destination, Backend& backend,
                           const PipelineSettings& settings, const JobPlan& plan,
                           const std::atomic<bool>& stop_requested, TransformChain* transforms,
                           CommitLoop::Hooks hooks) {
  Consumer consumer(destination, backend, settings, plan, transforms, std::move(hooks));
  return consumer.Run(source, stop_requested);
}

}  // namespace bizon
