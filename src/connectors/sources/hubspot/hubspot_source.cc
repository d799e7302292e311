// hubspot: HubSpot CRM v3 objects, read page by page. Declared only: the factory is null until the
// source is built.
#include "bizon/config_spec.h"
#include "bizon/value.h"
#include "connectors/registration.h"

namespace bizon {

Status RegisterHubspotSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "hubspot",
      .description = "HubSpot CRM v3 objects, with every property or a chosen list of them.",
      .streams =
          {
              {"contacts", false, "CRM contacts."},
              {"companies", false, "CRM companies."},
              {"deals", false, "CRM deals."},
          },
      .config =
          {
              .fields =
                  {
                      {.name = "properties",
                       .type = FieldType::kObject,
                       .description = "Which object properties are requested with each page.",
                       .default_value = Value(Value::Map{{"strategy", "all"}}),
                       .fields =
                           {
                               {.name = "strategy",
                                .type = FieldType::kEnum,
                                .description = "all requests every property HubSpot lists for "
                                               "the object; selected only those named below.",
                                .nullable = false,
                                .default_value = "all",
                                .enum_values = {"all", "selected"}},
                               {.name = "selected_properties",
                                .type = FieldType::kList,
                                .description = "Property names to request with the selected "
                                               "strategy; each must exist in HubSpot.",
                                .items = {FieldSpec{.name = "property",
                                                    .type = FieldType::kString}}},
                           },
                       .unknown_keys = UnknownKeys::kWarn},
                      // A private-app token (api_key) or an OAuth app; the refresh endpoint is
                      // always HubSpot's own.
                      AuthenticationField({"api_key", "oauth"}, /*required=*/true),
                  },
              .unknown_keys = UnknownKeys::kWarn,
          },
      .factory = nullptr,
  });
}

}  // namespace bizon
