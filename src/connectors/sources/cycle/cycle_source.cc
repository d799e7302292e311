// cycle: customers of a Cycle product, through its GraphQL API. Declared only: the factory is null
// until the source is built.
#include "bizon/config_spec.h"
#include "connectors/registration.h"

namespace bizon {

Status RegisterCycleSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "cycle",
      .description = "Cycle product customers, through the GraphQL API.",
      .streams = {{"customers", false, "Customers of the product, with their company."}},
      .config =
          {
              .fields =
                  {
                      {.name = "slug",
                       .type = FieldType::kString,
                       .description = "Slug of the Cycle product to read.",
                       .required = true,
                       .nullable = false,
                       .example = "my-product"},
                      // Sent as a bearer token.
                      AuthenticationField({"api_key"}, /*required=*/true),
                  },
              .unknown_keys = UnknownKeys::kWarn,
          },
      .factory = nullptr,
  });
}

}  // namespace bizon
