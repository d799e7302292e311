// bigquery_streaming: the original's legacy streaming destination (spec 8.2). No staging table:
// every sync mode appends to the final table. Rows go through the Storage Write API as
// bigquery_streaming_v2 writes them (BigqueryStreamingFlavor::kLegacy), exactly-once by default,
// where the original used tabledata.insertAll.
#include <memory>

#include "connectors/destinations/bigquery_common/bigquery_config_fields.h"
#include "connectors/destinations/bigquery_streaming_v2/bigquery_streaming_v2_destination.h"
#include "connectors/registration.h"

namespace bizon {
namespace {

Result<std::unique_ptr<BigqueryStreamingV2Destination>> CreateLegacy(
    const DestinationContext& context) {
  return BigqueryStreamingV2Destination::Create(context, {}, BigqueryStreamingFlavor::kLegacy);
}

}  // namespace

Status RegisterBigqueryStreamingDestination(ConnectorRegistry& registry) {
  return registry.AddDestination({
      .name = "bigquery_streaming",
      .description = "BigQuery through the Storage Write API in place of the legacy streaming "
                     "insert API (exactly-once committed streams by default); every sync mode "
                     "appends to the final table.",
      .alias = "bigquery",
      .config = {.fields = BigqueryStreamingFields(BigqueryStreamingFlavor::kLegacy),
                 .unknown_keys = UnknownKeys::kError},
      // No staging table: a full refresh appends too, so a reset would duplicate the table.
      .supports_reset = false,
      .check_config =
          [](const Value& config, SyncMode sync_mode) {
            return BigqueryConfigViolations(config, sync_mode,
                                            [](const DestinationContext& context) {
                                              auto created = CreateLegacy(context);
                                              return created ? Status::Ok() : created.error();
                                            });
          },
      .check_pipeline = CheckStreamTableIds,
      .factory = [](const DestinationContext& context) -> Result<std::unique_ptr<Destination>> {
        BIZON_ASSIGN_OR_RETURN(auto destination, CreateLegacy(context));
        return std::unique_ptr<Destination>(std::move(destination));
      },
  });
}

}  // namespace bizon
