// The logger destination: one log line per record, for trying a source out.
#include <spdlog/spdlog.h>

#include "connectors/destinations/destination_record.h"
#include "connectors/registration.h"

namespace bizon {
namespace {

class LoggerDestination final : public Destination {
 public:
  explicit LoggerDestination(const DestinationContext& context) : sync_(context.sync) {}

  Status Open(const Value& resume_state) override {
    (void)resume_state;
    return Status::Ok();
  }

  Result<Value> Write(const RecordBatch& records, int64_t loaded_at_us) override {
    (void)loaded_at_us;
    for (size_t i = 0; i < records.size(); ++i) {
      if (records.destination_id(i).empty()) {
        spdlog::info("[{}] {}", ToString(sync_.sync_mode), records.payload(i));
      } else {
        // Quoted and escaped: an id from data must not split or forge a log line.
        spdlog::info("[{}] {}: {}", ToString(sync_.sync_mode),
                     QuoteDestinationId(records.destination_id(i)), records.payload(i));
      }
    }
    return Value();
  }

  Status Finalize() override {
    switch (sync_.sync_mode) {
      case SyncMode::kFullRefresh:
        spdlog::info("Logger destination: full_refresh sync completed");
        break;
      case SyncMode::kIncremental:
        spdlog::info("Logger destination: incremental sync completed (records appended)");
        break;
      case SyncMode::kStream:
        spdlog::info("Logger destination: stream sync batch completed");
        break;
    }
    return Status::Ok();
  }

 private:
  SyncMetadata sync_;
};

}  // namespace

Status RegisterLoggerDestination(ConnectorRegistry& registry) {
  return registry.AddDestination({
      .name = "logger",
      .description = "Logs every record at INFO level; for testing and debugging.",
      .alias = "logger",
      .config = {.fields = {{.name = "dummy",
                             .type = FieldType::kString,
                             .description = "Placeholder kept for compatibility.",
                             .default_value = Value("bizon")}},
                 .unknown_keys = UnknownKeys::kError},
      .concurrent_members = true,
      .factory = [](const DestinationContext& context) -> Result<std::unique_ptr<Destination>> {
        return std::make_unique<LoggerDestination>(context);
      },
  });
}

}  // namespace bizon
