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
           const JobPlan& plan, TransformChain* transforms, Acknowledgements* acks)
      : destination_(destination),
        backend_(backend),
        settings_(settings),
        plan_(plan),
        progress_(settings.key.source_name + "." + settings.key.stream_name,
                  plan.job.total_records_to_fetch, plan.rows_already_written),
        destination_state_(plan.destination_state),
        transforms_(transforms),
        acks_(acks),
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
  Status RecordCursor(int64_t from, int64_t to, int64_t rows, const Value& pagination,
                      const Value& state);
  ConsumerResult Failed(ReturnStatus status, Status error);

  Destination& destination_;
  Backend& backend_;
  const PipelineSettings& settings_;
  const JobPlan& plan_;
  Buffer buffer_;
  Progress progress_;
  int64_t written_ = 0;
  std::optional<Value> last_state_;
  /// What the destination's last durable Write() returned (the resumed job's, before any).
  /// Every cursor carries it, including those of empty pages, because a resume hands the last
  /// cursor's state to Open(): a cursor without it would make Open() discard committed rows.
  Value destination_state_;
  TransformChain* transforms_;  // Null without transforms.
  Acknowledgements* acks_;      // Null when the runner acknowledges the source itself.
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

Status Consumer::RecordCursor(int64_t from, int64_t to, int64_t rows, const Value& pagination,
                              const Value& state) {
  bool exhausted = pagination.is_null() || (pagination.is_map() && pagination.AsMap().empty());
  DestinationCursor cursor{
      .id = "",
      .job_id = plan_.job.id,
      .key = settings_.key,
      .destination_name = settings_.destination_name,
      .from_source_iteration = from,
      .to_source_iteration = to,
      .rows_written = rows,
      .success = true,
      .pagination = exhausted ? std::nullopt : std::optional<std::string>(pagination.ToJson()),
      .destination_state =
          state.is_null() ? std::nullopt : std::optional<std::string>(state.ToJson()),
      .error_message = std::nullopt,
      .created_at_us = 0};
  BIZON_RETURN_IF_ERROR(
      backend_.CreateDestinationCursor(cursor).WithFailureClass(FailureClass::kBackend));
  if (acks_ != nullptr) acks_->Post(pagination);
  return Status::Ok();
}

Status Consumer::Flush() {
  if (buffer_.empty()) return Status::Ok();
  spdlog::debug("Writing in destination {} from source iteration {} to {}",
                settings_.destination_name, buffer_.from_iteration, buffer_.to_iteration);
  Result<Value> state =
      appending_ ? destination_.Sync() : destination_.Write(buffer_.records, NowMicros());
  if (!state) return state.error().WithFailureClass(FailureClass::kDestination);
  int64_t rows = static_cast<int64_t>(appending_ ? buffer_.appended_rows : buffer_.records.size());
  destination_state_ = std::move(*state);
  BIZON_RETURN_IF_ERROR(RecordCursor(buffer_.from_iteration, buffer_.to_iteration, rows,
                                     buffer_.pagination, destination_state_));
  tally_.Report(NowMicros());
  written_ += rows;
  progress_.Update(written_);
  buffer_.Clear();
  return Status::Ok();
}

Status Consumer::WriteOversized(QueueMessage& message) {
  // Write the iteration in buffer-sized chunks, and commit one cursor once all of it is durable:
  // a crash between chunks re-fetches the whole iteration, and the destination discards the
  // partial chunks on resume.
  const RecordBatch& records = message.records;
  tally_.Add(records);
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
    Result<Value> written = destination_.Write(chunk, NowMicros());
    if (!written) return written.error().WithFailureClass(FailureClass::kDestination);
    state = std::move(*written);
    begin = end;
  }
  int64_t rows = static_cast<int64_t>(records.size());
  destination_state_ = std::move(state);
  BIZON_RETURN_IF_ERROR(RecordCursor(message.iteration, message.iteration, rows,
                                     message.next_pagination, destination_state_));
  tally_.Report(NowMicros());
  written_ += rows;
  progress_.Update(written_);
  return Status::Ok();
}

ConsumerResult Consumer::Failed(ReturnStatus status, Status error) {
  spdlog::error("Consumer stopped: {}", error.message());
  failed_ = true;
  progress_.Finish(false);
  return {status, std::nullopt, std::move(error)};
}

ConsumerResult Consumer::Run(MessageSource& source, const std::atomic<bool>& stop_requested) {
  Status opened = destination_.Open(plan_.destination_state);
  if (!opened.ok()) {
    return Failed(ReturnStatus::kDestinationError,
                  opened.WithFailureClass(FailureClass::kDestination));
  }
  while (true) {
    if (stop_requested.load()) {
      return Failed(ReturnStatus::kKilledByRunner, CancelledError("the consumer was stopped"));
    }
    auto next = source.Next(std::chrono::milliseconds(500));
    if (!next) {
      // Transform workers report their failures through the channel (process runner).
      if (next.error().failure_class() == FailureClass::kTransform) {
        return Failed(ReturnStatus::kTransformError, next.error());
      }
      return Failed(ReturnStatus::kQueueError, next.error().WithFailureClass(FailureClass::kQueue));
    }
    if (!next->has_value()) {
      if (IsRipe(NowMicros())) {
        if (Status flushed = Flush(); !flushed.ok()) {
          return Failed(ReturnStatus::kDestinationError, flushed);
        }
      }
      continue;
    }
    QueueMessage& message = **next;
    switch (message.kind) {
      case QueueMessage::Kind::kErrorTermination: {
        // Nothing more is written and nothing is published: the run failed upstream.
        progress_.Finish(false);
        ConsumerResult result;
        result.producer_status = ParseReturnStatus(message.producer_status);
        result.status = result.producer_status.value_or(ReturnStatus::kSourceError);
        result.error = message.error;
        return result;
      }
      case QueueMessage::Kind::kTermination: {
        if (Status flushed = Flush(); !flushed.ok()) {
          return Failed(flushed.failure_class() == FailureClass::kBackend
                            ? ReturnStatus::kBackendError
                            : ReturnStatus::kDestinationError,
                        flushed);
        }
        if (!message.source_exhausted && settings_.sync_mode != SyncMode::kFullRefresh) {
          // Stopped at max_iterations with data left: keep the job open so the next run
          // continues from here instead of moving the watermark past unfetched records.
          Status paused =
              backend_.UpdateStreamJobStatus(plan_.job.id, JobStatus::kRunning, std::nullopt);
          if (!paused.ok()) return Failed(ReturnStatus::kBackendError, paused);
          Status released = backend_.SetJobOwner(plan_.job.id, "");
          if (!released.ok()) return Failed(ReturnStatus::kBackendError, released);
          spdlog::info("Run capped by max_iterations; the next run continues job {}", plan_.job.id);
          progress_.Finish(true);
          return {};
        }
        if (settings_.sync_mode == SyncMode::kStream) {
          // A bounded stream caught up: the job stays open for the next run.
          Status released = backend_.SetJobOwner(plan_.job.id, "");
          if (!released.ok()) return Failed(ReturnStatus::kBackendError, released);
          progress_.Finish(true);
          return {};
        }
        Status finalized = destination_.Finalize();
        if (!finalized.ok()) {
          return Failed(ReturnStatus::kDestinationError,
                        finalized.WithFailureClass(FailureClass::kDestination));
        }
        Status completed = CompleteJob(backend_, destination_, plan_, last_state_);
        if (!completed.ok()) {
          return Failed(completed.failure_class() == FailureClass::kDestination
                            ? ReturnStatus::kDestinationError
                            : ReturnStatus::kBackendError,
                        completed);
        }
        progress_.Finish(true);
        return {};
      }
      case QueueMessage::Kind::kData:
        break;
    }
    ScopedIterationSpan span(message.iteration, message.extracted_at_us, message.records, failed_);

    if (transforms_ != nullptr && !message.records.empty()) {
      if (Status applied = transforms_->Apply(message.records); !applied.ok()) {
        return Failed(ReturnStatus::kTransformError,
                      applied.WithFailureClass(FailureClass::kTransform));
      }
    }
    if (message.next_state) last_state_ = message.next_state;
    if (message.records.empty()) {
      // Nothing to write, but the position still moves: an empty page mid-stream must not make
      // a resume fetch it again from an older cursor.
      if (buffer_.empty() && settings_.buffer_bytes == 0) {
        Status recorded = RecordCursor(message.iteration, message.iteration, 0,
                                       message.next_pagination, destination_state_);
        if (!recorded.ok()) return Failed(ReturnStatus::kBackendError, recorded);
      } else if (!buffer_.empty()) {
        buffer_.to_iteration = message.iteration;
        buffer_.pagination = std::move(message.next_pagination);
      }
      continue;
    }
    Status status;
    int64_t size = static_cast<int64_t>(message.records.PayloadBytes());
    if (appending_) {
      status = Append(message);
      if (status.ok() && (settings_.buffer_bytes == 0 || IsRipe(NowMicros()) ||
                          buffer_.appended_bytes >= settings_.buffer_bytes)) {
        status = Flush();
      }
    } else if (settings_.buffer_bytes == 0) {
      Add(message);
      status = Flush();
    } else if (size > settings_.buffer_bytes) {
      status = Flush();
      if (status.ok()) status = WriteOversized(message);
    } else if (IsRipe(NowMicros()) || static_cast<int64_t>(buffer_.records.PayloadBytes()) + size >
                                          settings_.buffer_bytes) {
      status = Flush();
      if (status.ok()) Add(message);
    } else {
      Add(message);
    }
    if (!status.ok()) {
      return Failed(status.failure_class() == FailureClass::kBackend
                        ? ReturnStatus::kBackendError
                        : ReturnStatus::kDestinationError,
                    status);
    }
  }
}

}  // namespace

std::optional<ReturnStatus> ParseReturnStatus(std::string_view text) {
  for (ReturnStatus status :
       {ReturnStatus::kSuccess, ReturnStatus::kRunning, ReturnStatus::kSourceError,
        ReturnStatus::kDestinationError, ReturnStatus::kBackendError, ReturnStatus::kQueueError,
        ReturnStatus::kTransformError, ReturnStatus::kStreamError, ReturnStatus::kKilledByRunner}) {
    if (ToString(status) == text) return status;
  }
  return std::nullopt;
}

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
                           Acknowledgements* acks) {
  Consumer consumer(destination, backend, settings, plan, transforms, acks);
  return consumer.Run(source, stop_requested);
}

}  // namespace bizon
