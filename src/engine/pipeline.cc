#include "engine/pipeline.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/backend/backend_factory.h"
#include "engine/job.h"
#include "engine/members.h"
#include "engine/resolve.h"
#include "engine/runner/broker_runner.h"
#include "monitoring/monitor.h"

namespace bizon {
namespace {

/// What a run opened before its runner starts, in the order it is torn down.
struct OpenedRun {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Source> source;
  /// The settings the job runs under: a member's job has its own key.
  PipelineSettings settings;
  JobPlan plan;
  /// The member this process is (engine/members.h), empty for a pipeline's only process.
  std::string member;
};

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
  const Value& destination = settings.destination_config;
  MonitorIdentity identity{
      .pipeline_name = settings.pipeline_name,
      .source_name = settings.key.source_name,
      .stream_name = settings.key.stream_name,
      .destination_name = settings.destination_name,
      .destination_alias = config.config.is_map() && config.config.Find("destination") != nullptr
                               ? config.config.Find("destination")->GetString("alias")
                               : std::string(),
      .default_destination_id =
          destination.is_map() ? destination.GetString("destination_id", settings.destination_name)
                               : settings.destination_name};
  auto monitor = MakeMonitor(config.config.Find("monitoring"), identity);
  if (!monitor) {
    spdlog::warn("Monitoring is off for this run: {}", monitor.error().message());
    return nullptr;
  }
  return std::move(*monitor);
}

SourceContext SourceContextOf(const PipelineSettings& settings) {
  return {.pipeline_name = settings.key.name,
          .stream = settings.key.stream_name,
          .sync_mode = settings.sync_mode,
          .config = settings.source_config};
}

/// `--role producer`: no run lock of the consumer's, no InitJob, no destination.
RunOutcome RunProducerSide(const ResolvedRun& run, Backend& backend, double job_wait_s) {
  auto source = run.MakeSource(SourceContextOf(run.settings));
  if (!source) return EarlyFailure(source.error().failure_class(), source.error());
  if (Status connected = (*source)->CheckConnection(); !connected.ok()) {
    return EarlyFailure(FailureClass::kSource,
                        connected.WithContext("error while connecting to source"));
  }
  ProducerRoleResult produced =
      RunProducerRole(**source, backend, run.settings, *run.broker, job_wait_s);
  RunOutcome outcome =
      OutcomeOf({.producer = produced.producer, .records_published = produced.records_published},
                RunRole::kProducer);
  outcome.job_id = produced.job_id;
  if (!outcome.success) spdlog::error("{}", outcome.StatusText());
  return outcome;
}

/// Opens the source, takes the run lock, checks the connection and plans the job.
Result<OpenedRun> OpenRun(const ResolvedRun& run, std::unique_ptr<Backend> backend) {
  OpenedRun opened{.backend = std::move(backend), .settings = run.settings};
  BIZON_ASSIGN_OR_RETURN(opened.source, run.MakeSource(SourceContextOf(run.settings)));
  // Several processes may read a partitioned stream together, each as a member with its own
  // job (engine/members.h); other pipelines run one process at a time.
  std::string member = opened.source->MemberId();
  if (run.runner == RunnerKind::kStream && run.settings.sync_mode == SyncMode::kStream &&
      !member.empty() && opened.backend->HasPartitionLedger() &&
      run.destination_descriptor->concurrent_members) {
    opened.member = member;
    opened.settings.key = MemberKey(run.settings.key, member);
    spdlog::info(
        "Running as member {} of pipeline '{}': other processes of it may share the stream's "
        "partitions",
        member, run.settings.key.name);
  }
  Backend& state = *opened.backend;
  BIZON_RETURN_IF_ERROR(
      state.AcquireRunLock(opened.settings.key).Reclassified(FailureClass::kBackend));
  BIZON_RETURN_IF_ERROR(opened.source->CheckConnection()
                            .WithContext("error while connecting to source")
                            .Reclassified(FailureClass::kSource));
  // With a network queue, an interrupted full refresh resumes: the queue still holds its
  // iterations and its producer may still be running.
  auto plan = InitJob(state, opened.settings, *opened.source, state.RunLockIsExclusive(),
                      run.through_broker());
  if (!plan) return Fail(plan.error().Reclassified(FailureClass::kBackend));
  opened.plan = std::move(*plan);
  if (!opened.member.empty() && !opened.plan.resumed) {
    // A member's first run: positions the ledger lacks come from the stream's job of a run
    // before members (the ledger's own win at each claim).
    BIZON_RETURN_IF_ERROR(SeedFromPipelineJob(state, run.settings.key, opened.plan)
                              .Reclassified(FailureClass::kBackend));
  }
  return opened;
}

/// The destination's view of the job; a member's destination sees the pipeline's stream.
DestinationContext DestinationContextOf(const PipelineSettings& settings, const OpenedRun& opened) {
  Backend* backend = opened.backend.get();
  SyncMetadata sync{.name = settings.key.name,
                    .job_id = opened.plan.job.id,
                    .source_name = settings.key.source_name,
                    .stream_name = settings.key.stream_name,
                    .sync_mode = opened.plan.MaterializationMode(settings.sync_mode),
                    .destination_name = settings.destination_name,
                    .reset = opened.plan.is_reset};
  return {.sync = sync,
          .config = settings.destination_config,
          .job_abandoned = [backend](const std::string& job_id) -> Result<bool> {
            // Called while this run's new job exists, so an unfinished earlier one is abandoned.
            BIZON_ASSIGN_OR_RETURN(std::optional<StreamJob> job, backend->GetStreamJobById(job_id));
            return job.has_value() && job->status != JobStatus::kSucceeded;
          }};
}

/// Runs the planned job with the resolved runner and records how it ended.
RunOutcome RunJob(const LoadedConfig& config, const ResolvedRun& run, OpenedRun& opened,
                  RunRole role) {
  Backend& backend = *opened.backend;
  // Before the destination, which reports its large records to it, and so outlives it.
  ScopedMonitor monitor(StartMonitor(config, run.settings));
  DestinationContext destination_context = DestinationContextOf(run.settings, opened);
  destination_context.large_records = [&monitor](int64_t rows, std::string_view destination_id) {
    monitor.get().LargeRecords(rows, destination_id);
  };
  auto destination = run.destination_descriptor->factory(destination_context);
  if (!destination) {
    RecordJobFailure(backend, run.settings, opened.plan, destination.error().message());
    RunOutcome failed = EarlyFailure(FailureClass::kDestination, destination.error());
    failed.job_id = opened.plan.job.id;
    return failed;
  }
  std::optional<MemberLedger> ledger;
  if (!opened.member.empty()) {
    ledger.emplace(backend, run.settings, opened.member,
                   [&](const std::string& job_id, const Value& state) -> Status {
                     // Opening a job's destination with its last recorded state discards what
                     // it wrote after it, as a resume does.
                     DestinationContext context = destination_context;
                     context.sync.job_id = job_id;
                     BIZON_ASSIGN_OR_RETURN(std::unique_ptr<Destination> other,
                                            run.destination_descriptor->factory(context));
                     return other->Open(state);
                   });
  }
  if (run.runner != RunnerKind::kStream) monitor.get().PipelineStatus("running");
  RunContext context{
      .source = *opened.source,
      .destination = **destination,
      .backend = backend,
      .settings = run.runner == RunnerKind::kStream ? opened.settings : run.settings,
      .plan = opened.plan,
      .transforms = run.transforms.get(),
      .transforms_config = run.transforms_config,
      .make_source = [&run] { return run.MakeSource(SourceContextOf(run.settings)); },
      .ledger = ledger ? &*ledger : nullptr,
      .role = role,
      .broker = run.broker ? &*run.broker : nullptr};
  RunnerResult result = MakeRunner(run.runner, run.through_broker())->Run(context);
  RunOutcome outcome = OutcomeOf(result, role);
  outcome.job_id = opened.plan.job.id;
  if (outcome.stream) {
    if (!outcome.success) monitor.get().PipelineStatus(ToString(*outcome.stream));
  } else {
    monitor.get().PipelineStatus(ToString(outcome.consumer.value_or(ReturnStatus::kSuccess)));
  }
  if (!outcome.success) {
    RecordJobFailure(backend, run.settings, opened.plan, outcome.error);
  } else if (outcome.stream) {
    backend.SetJobOwner(opened.plan.job.id, "").IgnoreError();  // Stream jobs stay running.
  }
  return outcome;
}

}  // namespace

RunOutcome RunPipeline(const LoadedConfig& config, const ConnectorRegistry& registry,
                       const RunOptions& options) {
  auto run = ResolveRun(config, registry, options.role, options.transforms);
  if (!run)
    return EarlyFailure(run.error().failure_class() == FailureClass::kUnknown
                            ? FailureClass::kUnknown
                            : FailureClass::kConfig,
                        run.error());
  auto backend = OpenBackend(run->settings.backend_config);
  if (!backend) return EarlyFailure(FailureClass::kBackend, backend.error());
  if (options.role == RunRole::kProducer) {
    return RunProducerSide(*run, **backend, options.job_wait_s);
  }
  auto opened = OpenRun(*run, std::move(*backend));
  if (!opened) return EarlyFailure(opened.error().failure_class(), opened.error());
  RunOutcome outcome = RunJob(config, *run, *opened, options.role);
  if (auto written = opened->backend->GetWrittenRowCount(opened->plan.job.id)) {
    outcome.records_written = *written;
  }
  if (!outcome.success) spdlog::error("{}", outcome.StatusText());
  return outcome;
}

}  // namespace bizon
