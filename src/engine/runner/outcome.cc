#include "engine/runner/outcome.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bizon/clock.h"
#include "bizon/value.h"

namespace bizon {
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

bool IsRealFailure(ReturnStatus status) {
  return status != ReturnStatus::kSuccess && status != ReturnStatus::kKilledByRunner;
}

}  // namespace

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

ReturnStatus ReturnStatusOf(const Status& result, Side side) {
  if (result.ok()) return ReturnStatus::kSuccess;
  switch (result.failure_class()) {
    case FailureClass::kSource:
      return ReturnStatus::kSourceError;
    case FailureClass::kDestination:
      return ReturnStatus::kDestinationError;
    case FailureClass::kBackend:
      return ReturnStatus::kBackendError;
    case FailureClass::kQueue:
      return ReturnStatus::kQueueError;
    case FailureClass::kTransform:
      return ReturnStatus::kTransformError;
    case FailureClass::kStream:
      return ReturnStatus::kStreamError;
    case FailureClass::kKilled:
      return ReturnStatus::kKilledByRunner;
    case FailureClass::kNone:
    case FailureClass::kConfig:
    case FailureClass::kUnknown:
      break;
  }
  return side == Side::kConsumer ? ReturnStatus::kDestinationError : ReturnStatus::kSourceError;
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

RunOutcome EarlyFailure(FailureClass failure_class, const Status& status) {
  RunOutcome outcome;
  outcome.failure_class = failure_class;
  NoteError(outcome, status.WithFailureClass(failure_class));
  spdlog::error("{}", status.message());
  return outcome;
}

RunOutcome OutcomeOf(const RunnerResult& result, RunRole role) {
  RunOutcome outcome;
  outcome.role = role;
  outcome.records_published = result.records_published;
  if (result.stream) {
    outcome.stream = ReturnStatusOf(*result.stream, Side::kStream);
    outcome.success = result.stream->ok();
    outcome.failure_class = ClassOf(*outcome.stream);
    NoteError(outcome, *result.stream);
    return outcome;
  }
  // The consumer role knows the producer's result only from an error termination.
  Status producer_error = result.producer                                ? result.producer->error
                          : result.consumer && result.consumer->upstream ? result.consumer->error
                                                                         : Status::Ok();
  if (result.producer || (result.consumer && result.consumer->upstream)) {
    outcome.producer = ReturnStatusOf(producer_error, Side::kProducer);
  }
  Status consumer_error = result.consumer ? result.consumer->error : Status::Ok();
  if (result.consumer) outcome.consumer = ReturnStatusOf(consumer_error, Side::kConsumer);
  ReturnStatus producer = outcome.producer.value_or(ReturnStatus::kSuccess);
  ReturnStatus consumer = outcome.consumer.value_or(ReturnStatus::kSuccess);
  outcome.success = producer == ReturnStatus::kSuccess && consumer == ReturnStatus::kSuccess;
  if (outcome.success) return outcome;
  ReturnStatus blamed =
      consumer == ReturnStatus::kSuccess || consumer == ReturnStatus::kKilledByRunner ? producer
                                                                                      : consumer;
  outcome.failure_class = ClassOf(blamed);
  NoteError(outcome, IsRealFailure(producer) ? producer_error : consumer_error);
  NoteError(outcome, consumer_error);
  return outcome;
}

}  // namespace bizon
