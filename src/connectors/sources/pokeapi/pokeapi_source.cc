// pokeapi: the public PokéAPI (v2), followed page by page through its `next` links. Built on the
// rest_api machinery: one endpoint per stream, records `{name, url}` keyed by name.
#include <fmt/format.h>

#include "bizon/config_spec.h"
#include "bizon/registry.h"
#include "connectors/registration.h"
#include "connectors/sources/rest_api/rest_endpoint.h"
#include "http/source_session.h"

namespace bizon {
namespace {

class PokeapiSource final : public Source {
 public:
  PokeapiSource(std::string entity_url, std::shared_ptr<HttpSession> session)
      : entity_url_(entity_url),
        session_(session),
        endpoint_({.name = "pokeapi",
                   .url = std::move(entity_url),
                   .record_selector = "results",
                   .record_id = "name",
                   .pagination = {.type = PaginationSpec::Type::kNextUrl, .next_url_path = "next"}},
                  std::move(session)) {}

  Status CheckConnection() override {
    BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Get(entity_url_));
    (void)response;  // Reachable is all the check asks.
    return Status::Ok();
  }

  std::optional<int64_t> TotalRecordsCount() override {
    auto count = endpoint_.ReadFirstPage("count");
    if (!count || !*count || !(*count)->is_integer()) return std::nullopt;
    return (*count)->AsInteger();
  }

  // The first page is the entity URL with the API's default page size (20), then each page's
  // `next` URL, kept as the pagination {"next": url} as the original does.
  Result<SourceIteration> Get(const Value& pagination) override {
    return endpoint_.Fetch(pagination);
  }

 private:
  std::string entity_url_;
  std::shared_ptr<HttpSession> session_;
  RestEndpoint endpoint_;
};

/// The pokeapi source's options, declared once: the registry's spec and the reader both use it.
std::vector<FieldSpec> PokeapiFields() {
  return {Option::String("base_url",
                         "Root of the API; change it only to point at a mirror or a test server.")
              .NotNull()
              .Default("https://pokeapi.co/api/v2")};
}

}  // namespace

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
      .config = {.fields = PokeapiFields(), .unknown_keys = UnknownKeys::kWarn},
      .factory = [](const SourceContext& context) -> Result<std::unique_ptr<Source>> {
        OptionReader options(Option::Object("source", PokeapiFields()), context.config);
        std::string url = JoinUrl(options.String("base_url"), context.stream);
        BIZON_RETURN_IF_ERROR(options.status());
        // The API is public: an `authentication` block is ignored, as in the original.
        BIZON_ASSIGN_OR_RETURN(std::shared_ptr<HttpSession> session,
                               MakeSourceSession(context.config, {.use_authentication = false}));
        return std::make_unique<PokeapiSource>(std::move(url), std::move(session));
      },
  });
}

}  // namespace bizon
