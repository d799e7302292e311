#include "engine/producer.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bizon/clock.h"

namespace bizon {
namespace {

ProducerResult FailWith(MessageSink& sink, int64_t iteration, Status error) {
  QueueMessage message;
  message.kind = QueueMessage::Kind::kErrorTermination;
  message.iteration = iteration;
  message.error = error;
  // Ignored: if the consumer is gone there is nobody left to tell.
  sink.Push(std::move(message)).IgnoreError();
  return {std::move(error)};
}

/// Ends the stream normally. A consumer already gone has stopped the run on its own, and reports
/// why; the producer's work is done either way.
ProducerResult Terminate(MessageSink& sink, QueueMessage done) {
  done.kind = QueueMessage::Kind::kTermination;
  sink.Push(std::move(done)).IgnoreError();
  return {};
}

}  // namespace

ProducerResult RunProducer(Source& source, Backend* backend, const PipelineSettings& settings,
                           const JobPlan& plan, MessageSink& sink,
                           const std::atomic<bool>& stop_requested, Acknowledgements* acks) {
  const std::string label = settings.key.source_name + "." + settings.key.stream_name;
  int64_t iteration = plan.start_iteration;
  Value pagination = plan.start_pagination;
  int64_t rows_fetched = plan.rows_already_written;
  bool use_window = plan.window.has_value() && !plan.is_reset;

  if (plan.source_exhausted) return Terminate(sink, {.iteration = iteration});

  while (true) {
    if (stop_requested.load()) {
      return {CancelledError("the producer was asked to stop", FailureClass::kKilled)};
    }
    // The cap counts this run's iterations (0..N, N+1 in all, as the original), not the job's:
    // a resumed job already past N must still make progress.
    if (settings.max_iterations > 0 && iteration - plan.start_iteration > settings.max_iterations) {
      spdlog::info("Max iteration of {} reached for {}, stopping the run here",
                   settings.max_iterations, label);
      return Terminate(
          sink, {.iteration = iteration, .next_pagination = pagination, .source_exhausted = false});
    }
    if (backend != nullptr && iteration % settings.sync_cursor_every == 0) {
      Status written = backend->CreateSourceCursor({.job_id = plan.job.id,
                                                    .key = settings.key,
                                                    .iteration = iteration,
                                                    .rows_fetched = rows_fetched,
                                                    .next_pagination = pagination.ToJson()});
      if (!written.ok()) {
        return FailWith(sink, iteration, written.WithFailureClass(FailureClass::kBackend));
      }
    }
    if (std::optional<Value> recorded = acks != nullptr ? acks->Take() : std::nullopt) {
      if (Status committed = source.Commit(*recorded); !committed.ok()) {
        spdlog::error("Source {} could not acknowledge what was written: {}", label,
                      committed.message());
        return FailWith(sink, iteration, committed.WithFailureClass(FailureClass::kSource));
      }
    }
    int64_t extracted_at = NowMicros();
    Result<SourceIteration> fetched =
        use_window ? source.GetRecordsAfter(*plan.window, pagination) : source.Get(pagination);
    if (!fetched) {
      Status error = fetched.error()
                         .WithFailureClass(FailureClass::kSource)
                         .WithContext(fmt::format("{} iteration {}", label, iteration));
      spdlog::error("Source {} failed at iteration {}: {}", label, iteration,
                    fetched.error().message());
      return FailWith(sink, iteration, std::move(error));
    }
    SourceIteration& page = *fetched;
    bool last = page.IsLast();
    rows_fetched += static_cast<int64_t>(page.records.size());
    spdlog::debug("Source: {} - Iteration {} - Fetched: {}", label, iteration, page.records.size());

    QueueMessage message;
    message.kind = QueueMessage::Kind::kData;
    message.iteration = iteration;
    message.extracted_at_us = extracted_at;
    page.records.SetExtractedAt(extracted_at);
    message.records = std::move(page.records);
    message.next_pagination = last ? Value::EmptyMap() : page.next_pagination;
    message.next_state = std::move(page.next_state);
    if (Status pushed = sink.Push(std::move(message)); !pushed.ok()) {
      // The consumer stopped (class `killed`), or the channel failed (class `queue`).
      return {pushed.WithFailureClass(FailureClass::kKilled)};
    }
    if (last) {
      spdlog::info("Source {} exhausted after {} iterations, {} records", label, iteration + 1,
                   rows_fetched);
      return Terminate(sink, {.iteration = iteration + 1});
    }
    pagination = std::move(page.next_pagination);
    ++iteration;
  }
}

}  // namespace bizon
