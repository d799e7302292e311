// pokeapi: the public PokéAPI, followed page by page through its `next` links. Declared only: the
// factory is null until the source is built.
#include "connectors/registration.h"

namespace bizon {

Status RegisterPokeapiSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "pokeapi",
      .description = "PokéAPI, a public API without authentication: name and URL of each entry.",
      .streams =
          {
              {"pokemon", false, "Every Pokémon."},
              {"berry", false, "Every berry."},
              {"item", false, "Every item."},
          },
      // Nothing beyond the common keys.
      .config = {.fields = {}, .unknown_keys = UnknownKeys::kWarn},
      .factory = nullptr,
  });
}

}  // namespace bizon
