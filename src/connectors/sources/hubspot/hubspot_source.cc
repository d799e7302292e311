// hubspot: HubSpot CRM v3 objects (contacts, companies, deals, tickets, products), read page by
// page with every property or a chosen list of them. Incremental runs use the search endpoint on
// the objects' modification time within the run window (see hubspot_api.h). README.md has the
// details and the deviations from the original.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "bizon/clock.h"
#include "bizon/config_spec.h"
#include "bizon/registry.h"
#include "bizon/value.h"
#include "connectors/registration.h"
#include "connectors/sources/hubspot/hubspot_api.h"
#include "http/json_page.h"
#include "http/source_session.h"

namespace bizon {
namespace {

// The original's session: the default one with HubSpot's own retries (total 50, backoff 1, status
// budget 30, GET and POST). 5xx are retried on status alone; 429 only with Retry-After, so that
// the daily limit (a 429 HubSpot sends without one) is reported at once instead of being retried
// fifty times; a secondly 429 without Retry-After is retried by the source (see Send). Non-2xx
// answers come back to the source, which names them. Timeouts come from the `http` block.
Result<HttpPolicy> HubspotPolicy(const Value& source_config) {
  BIZON_ASSIGN_OR_RETURN(HttpPolicy policy, HttpPolicy::FromSourceConfig(source_config));
  policy.raise_for_status = false;
  policy.retries.total = 50;
  policy.retries.status_budget = 30;
  policy.retries.backoff_factor = 1;
  policy.retries.status_forcelist = {500, 502, 503, 504};
  policy.retries.allowed_methods = {"GET", "POST"};
  policy.retries.retry_after_max.reset();
  return policy;
}

std::vector<std::string> StringList(const Value* value) {
  std::vector<std::string> out;
  if (value == nullptr || !value->is_list()) return out;
  for (const Value& item : value->AsList()) out.push_back(item.ToDisplayString());
  return out;
}

class HubspotSource final : public Source {
 public:
  // `options`: the source block, read against HubspotFields(); the caller checks its status.
  HubspotSource(const std::string& object, OptionReader& options,
                std::shared_ptr<HttpSession> session)
      : object_(object),
        base_url_(options.String("base_url")),
        modified_property_(HubspotModifiedProperty(object)),
        init_pipeline_(options.Boolean("init_pipeline")),
        session_(std::move(session)) {
    OptionReader properties = options.Object("properties");
    strategy_ = properties.String("strategy");
    selected_ = StringList(properties.Find("selected_properties"));
  }

  Status CheckConnection() override {
    auto page = Get(Value::EmptyMap());
    if (page) return Status::Ok();
    const Status& error = page.error();
    if (error.failure_class() == FailureClass::kConfig) return error;
    if (refused_) {
      return Status(
          error.code(),
          fmt::format("{}, please check if provided credentials are valid.", error.message()),
          FailureClass::kSource);
    }
    return error;
  }

  std::optional<int64_t> TotalRecordsCount() override {
    std::string body =
        R"({"filterGroups":[{"filters":[{"operator":"HAS_PROPERTY","propertyName":"hs_object_id"}]}]})";
    auto page = Call("POST", SearchPath(), {}, std::move(body));
    if (!page) {
      spdlog::warn("HubSpot {}: could not count the objects: {}", object_, page.error().message());
      return std::nullopt;
    }
    auto total = page->Find("total");
    if (!total || !*total || !(*total)->is_integer()) return std::nullopt;
    return (*total)->AsInteger();
  }

  Result<SourceIteration> Get(const Value& pagination) override {
    BIZON_RETURN_IF_ERROR(LoadProperties());
    QueryParams query = {{"limit", std::to_string(kHubspotListPageSize)}};
    if (!properties_.empty())
      query.emplace_back("properties", fmt::format("{}", fmt::join(properties_, ",")));
    if (std::string after = pagination.GetString("after"); !after.empty()) {
      query.emplace_back("after", std::move(after));
    }
    BIZON_ASSIGN_OR_RETURN(JsonPage page,
                           Call("GET", fmt::format("crm/v3/objects/{}", object_), query));
    BIZON_ASSIGN_OR_RETURN(HubspotObjectPage objects,
                           ParseHubspotObjectPage(page, modified_property_));
    SourceIteration iteration = ToIteration(objects.objects);
    if (objects.next_after) {
      iteration.next_pagination =
          Value(Value::Map{{"link", objects.next_link ? Value(*objects.next_link) : Value()},
                           {"after", Value(*objects.next_after)}});
    }
    return iteration;
  }

  Result<SourceIteration> GetRecordsAfter(const IncrementalState& state,
                                          const Value& pagination) override {
    BIZON_RETURN_IF_ERROR(LoadProperties());
    int64_t upper_ms = state.run_started_at_us / 1000;
    BIZON_ASSIGN_OR_RETURN(HubspotSearchCursor cursor,
                           HubspotSearchCursor::FromValue(pagination, state.last_run_us / 1000));
    if (cursor.lower_ms >= upper_ms) return SourceIteration{};
    if (!cursor.after && cursor.read_in_window == 0) {
      spdlog::info("HubSpot {}: searching the objects with {} in [{}, {})", object_,
                   modified_property_, FormatIsoTimestamp(cursor.lower_ms * 1000),
                   FormatIsoTimestamp(upper_ms * 1000));
    }
    BIZON_ASSIGN_OR_RETURN(JsonPage page,
                           Call("POST", SearchPath(), {},
                                HubspotSearchBody(cursor, upper_ms, modified_property_, properties_,
                                                  kHubspotSearchPageSize)));
    BIZON_ASSIGN_OR_RETURN(HubspotObjectPage objects,
                           ParseHubspotObjectPage(page, modified_property_));
    BIZON_ASSIGN_OR_RETURN(HubspotSearchStep step, AdvanceHubspotSearch(cursor, std::move(objects),
                                                                        kHubspotSearchPageSize));
    SourceIteration iteration = ToIteration(step.emit);
    if (step.next) {
      if (!step.next->after) {
        spdlog::info("HubSpot {}: {} search results read, the search starts again from {}", object_,
                     kHubspotSearchResultCap, FormatIsoTimestamp(step.next->lower_ms * 1000));
      }
      iteration.next_pagination = step.next->ToValue();
    }
    return iteration;
  }

 private:
  std::string SearchPath() const { return fmt::format("crm/v3/objects/{}/search", object_); }

  static SourceIteration ToIteration(const std::vector<HubspotObject>& objects) {
    SourceIteration iteration;
    int64_t now = NowMicros();
    for (const HubspotObject& object : objects) iteration.records.Add(object.id, object.json, now);
    return iteration;
  }

  // The properties every page asks for, listed once per source (the original lists them when it
  // is built; init_pipeline: false skips that, and then `all` asks for HubSpot's defaults).
  Status LoadProperties() {
    if (properties_loaded_) return Status::Ok();
    if (!init_pipeline_) {
      if (strategy_ == "selected") properties_ = selected_;
      properties_loaded_ = true;
      return Status::Ok();
    }
    BIZON_ASSIGN_OR_RETURN(JsonPage page,
                           Call("GET", fmt::format("crm/v3/properties/{}", object_)));
    BIZON_ASSIGN_OR_RETURN(std::vector<std::string> available, ParseHubspotPropertyNames(page));
    BIZON_ASSIGN_OR_RETURN(properties_, SelectHubspotProperties(available, strategy_, selected_));
    properties_loaded_ = true;
    spdlog::info("HubSpot {}: requesting {} properties", object_, properties_.size());
    return Status::Ok();
  }

  // One request; a non-2xx answer becomes an error naming it. A 429 without Retry-After is the
  // daily limit (reported at once) or a secondly one (waited out here, as the policy would).
  Result<JsonPage> Call(std::string method, const std::string& path, QueryParams query = {},
                        std::string body = {}) {
    HttpRequest request{.method = std::move(method),
                        .url = JoinUrl(base_url_, path),
                        .query = std::move(query),
                        .body = std::move(body)};
    if (request.method == "POST") request.headers = {{"Content-Type", "application/json"}};
    std::string url = AppendQuery(request.url, request.query);
    const RetryPolicy& retries = session_->policy().retries;
    for (int retry = 1;; ++retry) {
      BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Send(request));
      if (response.ok()) {
        return JsonPage(std::move(response.body), fmt::format("{} {}", request.method, url));
      }
      refused_ = response.status == 400 || response.status == 401 || response.status == 403;
      if (response.status == 429 && !response.Header("retry-after")) {
        std::string policy = HubspotRateLimitPolicy(response.body);
        if (policy == "DAILY") {
          Status error = StatusError(request.method, url, std::move(response));
          return Fail(Status(error.code(),
                             "HubSpot's daily API limit is reached (it resets at midnight in the "
                             "account's time zone): " +
                                 error.message(),
                             FailureClass::kSource));
        }
        if (retry <= retries.total) {
          double wait = std::max(1.0, retries.BackoffSeconds(retry));
          spdlog::warn(
              "HubSpot rate limit {} without Retry-After: waiting {:.1f} s (retry {} of "
              "{}): {} {}",
              policy.empty() ? "(unnamed)" : policy, wait, retry, retries.total, request.method,
              url);
          session_->sleep()(wait);
          continue;
        }
      }
      return Fail(StatusError(request.method, url, std::move(response)));
    }
  }

  // HttpStatusError with HubSpot's error body summed up in one line (its raw JSON is long).
  static Status StatusError(std::string_view method, std::string_view url, HttpResponse response) {
    if (std::string summary = HubspotErrorSummary(response.body); !summary.empty()) {
      response.body = std::move(summary);
    }
    return HttpStatusError(method, url, response);
  }

  std::string object_;
  std::string base_url_;
  std::string modified_property_;
  bool init_pipeline_;
  std::string strategy_;
  std::vector<std::string> selected_;
  std::vector<std::string> properties_;
  bool properties_loaded_ = false;
  bool refused_ = false;  // The last failed answer refused the request (400, 401, 403).
  std::shared_ptr<HttpSession> session_;
};

/// The hubspot source's options, declared once: the registry's spec and the reader both use it.
std::vector<FieldSpec> HubspotFields() {
  FieldSpec properties =
      Option::Object(
          "properties",
          {Option::Enum("strategy", {"all", "selected"},
                        "all requests every property HubSpot lists for the object; selected only "
                        "those named below.")
               .NotNull()
               .Default("all"),
           Option::List("selected_properties", Option::String("property"),
                        "Property names to request with the selected strategy; each must exist "
                        "in HubSpot.")},
          "Which object properties are requested with each page.")
          .Default(Value::EmptyMap())
          .OnUnknownKeys(UnknownKeys::kWarn);
  return {
      std::move(properties),
      Option::String("base_url",
                     "Root of the API (and of its OAuth token endpoint); change it only to point "
                     "at a test server.")
          .NotNull()
          .Default("https://api.hubapi.com"),
      // A private-app token (api_key) or an OAuth app; the refresh endpoint is always HubSpot's
      // own.
      AuthenticationField({"api_key", "oauth"}, /*required=*/true),
      // A key every source accepts (the original's common source config); only this one reads
      // it, so its effect is declared here, over the common declaration.
      Option::Boolean("init_pipeline",
                      "false skips reading the object's property list at start-up: selected then "
                      "sends its list unchecked, all sends none (HubSpot's default properties).")
          .Default(true),
  };
}

}  // namespace

Status RegisterHubspotSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "hubspot",
      .description = "HubSpot CRM v3 objects, with every property or a chosen list of them; "
                     "incremental through the search API on the modification time.",
      .streams =
          {
              {"contacts", true, "CRM contacts (incremental on lastmodifieddate)."},
              {"companies", true, "CRM companies (incremental on hs_lastmodifieddate)."},
              {"deals", true, "CRM deals (incremental on hs_lastmodifieddate)."},
              {"tickets", true, "CRM tickets (incremental on hs_lastmodifieddate)."},
              {"products", true, "CRM products (incremental on hs_lastmodifieddate)."},
          },
      .config = {.fields = HubspotFields(), .unknown_keys = UnknownKeys::kWarn},
      .factory = [](const SourceContext& context) -> Result<std::unique_ptr<Source>> {
        OptionReader options(Option::Object("source", HubspotFields()), context.config);
        std::string base_url = options.String("base_url");
        BIZON_RETURN_IF_ERROR(options.status());
        BIZON_ASSIGN_OR_RETURN(HttpPolicy policy, HubspotPolicy(context.config));
        BIZON_ASSIGN_OR_RETURN(
            std::shared_ptr<HttpSession> session,
            MakeSourceSession(context.config, {.auth = {.allowed_types = {"api_key", "oauth"},
                                                        .token_refresh_endpoint =
                                                            JoinUrl(base_url, "oauth/v1/token")},
                                               .default_headers = {{"Accept", "application/json"}},
                                               .policy = std::move(policy)}));
        auto source = std::make_unique<HubspotSource>(context.stream, options, std::move(session));
        BIZON_RETURN_IF_ERROR(options.status());
        return source;
      },
  });
}

}  // namespace bizon
