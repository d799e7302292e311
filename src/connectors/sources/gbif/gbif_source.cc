// gbif: occurrence records of the Global Biodiversity Information Facility, a public API used as a
// load generator. Declared only: the factory is null until the source is built.
#include "bizon/config_spec.h"
#include "connectors/registration.h"

namespace bizon {

Status RegisterGbifSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "gbif",
      .description = "GBIF occurrence search, a public API without authentication; at most "
                     "100,000 records per run (its paging limit).",
      .streams = {{"occurrence", false, "Occurrence records, offset-paginated."}},
      .config =
          {
              .fields =
                  {
                      {.name = "page_limit",
                       .type = FieldType::kInteger,
                       .description = "Records per request; values above 300 (the API maximum) "
                                      "are read as 300.",
                       .nullable = false,
                       .default_value = 300,
                       .minimum = 1},
                      {.name = "max_records",
                       .type = FieldType::kInteger,
                       .description = "Stop after this many records; unset or above 100,000 "
                                      "means 100,000.",
                       .minimum = 1},
                  },
              .unknown_keys = UnknownKeys::kWarn,
          },
      .factory = nullptr,
  });
}

}  // namespace bizon
