// cycle: customers of a Cycle product, through its GraphQL API, 100 per page following the
// relay-style cursor. The query and the reading of its answers: cycle_customers.h.
#include <fmt/format.h>

#include "bizon/clock.h"
#include "bizon/config_spec.h"
#include "bizon/registry.h"
#include "connectors/registration.h"
#include "connectors/sources/cycle/cycle_customers.h"
#include "http/json_page.h"
#include "http/source_session.h"

namespace bizon {
namespace {

class CycleSource final : public Source {
 public:
  CycleSource(std::string endpoint, std::string slug, std::shared_ptr<HttpSession> session)
      : endpoint_(std::move(endpoint)), slug_(std::move(slug)), session_(std::move(session)) {}

  // As the original, nothing is sent before the first page: a refused token or an unknown slug
  // fails that page, before anything is written.
  Status CheckConnection() override { return Status::Ok(); }

  Result<SourceIteration> Get(const Value& pagination) override {
    BIZON_ASSIGN_OR_RETURN(
        HttpResponse response,
        session_->PostJson(endpoint_, CycleCustomersRequestBody(slug_, pagination)));
    JsonPage page(std::move(response.body), fmt::format("POST {}", endpoint_));
    return ReadCycleCustomersPage(page, slug_, NowMicros());
  }

 private:
  std::string endpoint_;
  std::string slug_;
  std::shared_ptr<HttpSession> session_;
};

/// The cycle source's options, declared once: the registry's spec and the reader both use it.
std::vector<FieldSpec> CycleFields() {
  return {
      Option::String("slug", "Slug of the Cycle product to read.")
          .Required()
          .NotNull()
          .Example("my-product"),
      // Sent as a bearer token.
      AuthenticationField({"api_key"}, /*required=*/true),
      Option::String("base_url",
                     "Root of the API (the query goes to <base_url>/graphql); change it only to "
                     "point at a test server.")
          .NotNull()
          .Default("https://api.product.cycle.app"),
  };
}

}  // namespace

Status RegisterCycleSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "cycle",
      .description = "Cycle product customers, through the GraphQL API.",
      .streams = {{"customers", false, "Customers of the product, with their company."}},
      .config = {.fields = CycleFields(), .unknown_keys = UnknownKeys::kWarn},
      .factory = [](const SourceContext& context) -> Result<std::unique_ptr<Source>> {
        OptionReader options(Option::Object("source", CycleFields()), context.config);
        std::string endpoint = JoinUrl(options.String("base_url"), "graphql");
        std::string slug = options.String("slug");
        BIZON_RETURN_IF_ERROR(options.status());
        BIZON_ASSIGN_OR_RETURN(
            std::shared_ptr<HttpSession> session,
            MakeSourceSession(context.config, {.auth = {.allowed_types = {"api_key"}}}));
        return std::make_unique<CycleSource>(std::move(endpoint), std::move(slug),
                                             std::move(session));
      },
  });
}

}  // namespace bizon
