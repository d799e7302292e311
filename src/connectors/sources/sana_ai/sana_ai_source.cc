// sana_ai: a Sana Insight report, run as an asynchronous CSV export. Declared only: the factory is
// null until the source is built.
#include "bizon/config_spec.h"
#include "connectors/registration.h"

namespace bizon {

Status RegisterSanaAiSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "sana_ai",
      .description = "Sana Insight report: runs a query as a CSV export and reads its rows.",
      .streams = {{"insight_report", false, "Rows of the query's result."}},
      .config =
          {
              .fields =
                  {
                      {.name = "domain",
                       .type = FieldType::kString,
                       .description = "Workspace subdomain, as in <domain>.sana.ai.",
                       .required = true,
                       .nullable = false,
                       .example = "acme"},
                      {.name = "query",
                       .type = FieldType::kString,
                       .description = "SQL query the report runs.",
                       .required = true,
                       .nullable = false},
                      // OAuth client credentials against the workspace token endpoint.
                      AuthenticationField({"oauth"}, /*required=*/true),
                  },
              .unknown_keys = UnknownKeys::kWarn,
          },
      .factory = nullptr,
  });
}

}  // namespace bizon
