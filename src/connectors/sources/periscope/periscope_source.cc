// periscope: Periscope Data / Sisense objects read through the private endpoints of its web app,
// authenticated with a browser session (two cookies and the CSRF token), as the original
// connector reads them. See README.md for what each stream fetches.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>
#include <thread>
#include <vector>

#include "bizon/clock.h"
#include "bizon/config_spec.h"
#include "bizon/registry.h"
#include "bizon/secret_mask.h"
#include "connectors/registration.h"
#include "connectors/sources/periscope/periscope_widgets.h"
#include "http/json_page.h"
#include "http/source_session.h"

namespace bizon {
namespace {

/// The two session cookies the web app needs, in place of a free cookie map.
FieldSpec PeriscopeCookiesField() {
  return {
      .name = "cookies",
      .type = FieldType::kObject,
      .description = "Cookies of a logged-in browser session.",
      .required = true,
      .nullable = false,
      .fields =
          {
              {.name = "cf_bm",
               .type = FieldType::kString,
               .description = "Value of the __cf_bm cookie.",
               .required = true,
               .nullable = false,
               .secret = true},
              {.name = "periscope_session",
               .type = FieldType::kString,
               .description = "Value of the periscope_session cookie.",
               .required = true,
               .nullable = false,
               .secret = true},
          },
      .unknown_keys = UnknownKeys::kWarn,
  };
}

/// Replaces the `cookies` map inside a `params` block (or any of its alternatives).
void NarrowCookies(std::vector<FieldSpec>& fields) {
  for (FieldSpec& field : fields) {
    if (field.name != "params") continue;
    for (FieldSpec& param : field.fields) {
      if (param.name == "cookies") param = PeriscopeCookiesField();
    }
    for (FieldSpec& shape : field.one_of) {
      for (FieldSpec& param : shape.fields) {
        if (param.name == "cookies") param = PeriscopeCookiesField();
      }
    }
  }
}

FieldSpec PeriscopeAuthenticationField() {
  FieldSpec authentication = AuthenticationField({"cookies"}, /*required=*/true);
  NarrowCookies(authentication.fields);
  for (VariantSpec& variant : authentication.variants) NarrowCookies(variant.fields);
  return authentication;
}

/// The periscope source's options, declared once: the registry's spec and the reader both use it.
std::vector<FieldSpec> PeriscopeFields() {
  return {
      Option::String("workspace_name", "Name of the Periscope workspace (not used by any request).")
          .Required()
          .NotNull(),
      Option::Integer("client_site_id", "Numeric id of the site, sent with every request.")
          .Required()
          .NotNull(),
      Option::Integer("database_id", "Only charts that query this database are kept.")
          .Required()
          .NotNull(),
      Option::String("x_csrf_token",
                     "CSRF token of the browser session, sent as the x-csrf-token header.")
          .Required()
          .NotNull()
          .Secret(),
      PeriscopeAuthenticationField(),
      Option::String("base_url", "Root of the web app; change it only to point at a test server.")
          .NotNull()
          .Default("https://app.periscopedata.com"),
  };
}

// The original processes 10 dashboards per iteration, one thread each.
constexpr size_t kDashboardsPerIteration = 10;
// The original's cap on widget calls per dashboard.
constexpr int kMaxWidgetCalls = 1000;
// Each widget call asks for the rows below the previous call's window.
constexpr int64_t kFluidRowStep = 50;

// The browser the original impersonates (Chrome 118 on macOS); sent with every request.
HttpHeaders BrowserHeaders(const std::string& csrf_token) {
  return {
      {"authority", "app.periscopedata.com"},
      {"accept", "application/json, text/javascript, */*; q=0.01"},
      {"accept-language", "fr-FR,fr;q=0.9,en-US;q=0.8,en;q=0.7"},
      {"sec-ch-ua", R"("Chromium";v="118", "Google Chrome";v="118", "Not=A?Brand";v="99")"},
      {"sec-ch-ua-mobile", "?0"},
      {"sec-ch-ua-platform", R"("macOS")"},
      {"sec-fetch-dest", "empty"},
      {"sec-fetch-mode", "cors"},
      {"sec-fetch-site", "same-origin"},
      {"user-agent",
       "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
       "Chrome/118.0.0.0 Safari/537.36"},
      {"x-requested-with", "XMLHttpRequest"},
      {"x-csrf-token", csrf_token},
  };
}

// The original's authentication block: the configured cookies under their wire names
// (`__cf_bm`, `periscope_session`) and the browser headers, for the toolkit's cookie
// authenticator. `options`: the source block, read against PeriscopeFields().
Value WireAuthentication(OptionReader& options) {
  OptionReader cookies = options.Object("authentication").Object("params").Object("cookies");
  Value::Map headers;
  for (auto& [name, value] : BrowserHeaders(options.String("x_csrf_token"))) {
    headers.emplace_back(name, Value(value));
  }
  Value::Map wire_cookies = {{"__cf_bm", Value(cookies.String("cf_bm"))},
                             {"periscope_session", Value(cookies.String("periscope_session"))}};
  return Value(Value::Map{
      {"type", Value("cookies")},
      {"params", Value(Value::Map{{"cookies", Value(std::move(wire_cookies))},
                                  {"headers", Value(std::move(headers))}})},
  });
}

class PeriscopeSource final : public Source {
 public:
  // `options`: the source block, read against PeriscopeFields(); the caller checks its status.
  PeriscopeSource(const std::string& stream, OptionReader& options,
                  std::shared_ptr<HttpSession> session)
      : stream_(stream),
        base_url_(options.String("base_url")),
        client_site_id_(options.Integer("client_site_id")),
        database_id_(options.Integer("database_id")),
        session_(std::move(session)) {}

  // As in the original, nothing is checked up front: a refused session fails the first call.

  Result<SourceIteration> Get(const Value& pagination) override {
    if (stream_ == "dashboards") return Listing("/login_state/dashboards", "Dashboard");
    if (stream_ == "views") return Listing("/login_state/sql_views", "SqlView");
    if (stream_ == "users") return Listing("/users/owners", "");
    if (stream_ == "databases") return Listing("/welcome/remaining_state/site_models", "Database");
    if (stream_ == "dashboards_metadata") return DashboardsMetadata();
    if (stream_ == "charts") return Charts(pagination);
    return Fail(InvalidArgumentError(fmt::format("stream {} is not a periscope stream", stream_)));
  }

 private:
  // One call of the web app: JSON content type on every request (GET included, as the
  // original's session.call sets it), statuses checked here so a refused session is named.
  // `refused`, when given, is set when the failure is a refused session.
  Result<JsonPage> Call(std::string method, const std::string& path, QueryParams query,
                        std::string body = {}, bool* refused = nullptr) {
    HttpRequest request{.method = std::move(method),
                        .url = JoinUrl(base_url_, path),
                        .query = std::move(query),
                        .headers = {{"content-type", "application/json"}},
                        .body = std::move(body),
                        .raise_for_status = false};
    std::string method_name = request.method;
    std::string url = AppendQuery(request.url, request.query);
    BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Send(request));
    if (!response.ok()) {
      Status error = HttpStatusError(method_name, url, response);
      if (response.status == 401 || response.status == 403 || response.status == 422) {
        if (refused != nullptr) *refused = true;
        return Fail(error.WithContext(
            "Periscope refused the browser session (the cf_bm or periscope_session cookie or "
            "the x_csrf_token is wrong or has expired: copy them again from a logged-in "
            "browser)"));
      }
      return Fail(error);
    }
    return JsonPage(std::move(response.body), fmt::format("{} {}", method_name, url));
  }

  QueryParams SiteQuery() const { return {{"client_site_id", std::to_string(client_site_id_)}}; }

  // Every item of the array at `array_path` becomes a record keyed by its id.
  static Status AddItems(const JsonPage& page, std::string_view array_path,
                         SourceIteration& iteration) {
    int64_t now = NowMicros();
    return page.ForEachObject(array_path, {"id"}, [&](const JsonObjectView& item) -> Status {
      BIZON_ASSIGN_OR_RETURN(std::string id,
                             PeriscopeRecordId(item.fields[0], page.origin(), item.index));
      iteration.records.Add(id, item.json, now);
      return Status::Ok();
    });
  }

  // The single-call streams: one GET, every item of one array, one iteration.
  Result<SourceIteration> Listing(std::string_view path, std::string_view array_path) {
    BIZON_ASSIGN_OR_RETURN(JsonPage page, Call("GET", std::string(path), SiteQuery()));
    SourceIteration iteration;
    BIZON_RETURN_IF_ERROR(AddItems(page, array_path, iteration));
    return iteration;
  }

  Result<SourceIteration> DashboardsMetadata() {
    Value body(Value::Map{
        {"client_site_id", Value(client_site_id_)},
        {"filters", Value(Value::List{Value(Value::Map{{"name", Value("typeFilter")},
                                                       {"input", Value("Dashboard")}})})},
        {"limit", Value(2000)},
        {"query_plan", Value()},
    });
    BIZON_ASSIGN_OR_RETURN(JsonPage page, Call("POST", "/global_search/search", {}, body.ToJson()));
    SourceIteration iteration;
    BIZON_RETURN_IF_ERROR(AddItems(page, "results.data", iteration));
    return iteration;
  }

  // The first iteration lists the dashboards; each one reads the charts of the next 10, in
  // parallel, and carries the rest in the pagination {"dashboard_ids": [...]}.
  Result<SourceIteration> Charts(const Value& pagination) {
    std::vector<std::string> ids;
    if (const Value* listed = pagination.is_map() ? pagination.Find("dashboard_ids") : nullptr;
        listed != nullptr && listed->is_list()) {
      for (const Value& id : listed->AsList()) ids.push_back(id.ToDisplayString());
    } else {
      BIZON_ASSIGN_OR_RETURN(SourceIteration dashboards,
                             Listing("/login_state/dashboards", "Dashboard"));
      for (size_t i = 0; i < dashboards.records.size(); ++i) {
        ids.emplace_back(dashboards.records.id(i));
      }
      if (ids.empty()) {
        spdlog::warn("No dashboard found");
        return SourceIteration{};
      }
    }
    size_t batch = std::min(ids.size(), kDashboardsPerIteration);
    std::vector<Result<std::vector<PeriscopeChart>>> results(batch, std::vector<PeriscopeChart>{});
    std::vector<std::thread> workers;
    workers.reserve(batch);
    for (size_t i = 0; i < batch; ++i) {
      workers.emplace_back([this, &results, &ids, i] { results[i] = DashboardCharts(ids[i]); });
    }
    for (std::thread& worker : workers) worker.join();

    SourceIteration iteration;
    int64_t now = NowMicros();
    for (auto& result : results) {
      if (!result) return Fail(std::move(result).error());
      for (const PeriscopeChart& chart : *result) iteration.records.Add(chart.id, chart.json, now);
    }
    if (ids.size() > batch) {
      Value::List rest;
      for (size_t i = batch; i < ids.size(); ++i) rest.emplace_back(ids[i]);
      iteration.next_pagination = Value(Value::Map{{"dashboard_ids", Value(std::move(rest))}});
    }
    return iteration;
  }

  // The charts of one dashboard: widget windows of 50 fluid rows until one comes back empty.
  // A failed call ends the dashboard with what it had, logged, as the original's first call
  // does; only a refused session fails the run (every other dashboard would fail the same way).
  Result<std::vector<PeriscopeChart>> DashboardCharts(const std::string& dashboard_id) {
    std::vector<PeriscopeChart> charts;
    std::set<std::string> seen;
    int64_t fluid_row = 0;
    for (int call = 0; call < kMaxWidgetCalls; ++call) {
      QueryParams query = {{"current_dashboard", dashboard_id},
                           {"minimum_dashboard_fluid_row", std::to_string(fluid_row)},
                           {"fluid_column_for_last_widget_in_row", "0"},
                           {"client_site_id", std::to_string(client_site_id_)}};
      bool refused = false;
      auto page = Call("GET", "/welcome/remaining_widgets", std::move(query), {}, &refused);
      if (refused) return Fail(page.error());
      Result<size_t> widgets = page ? ReadPeriscopeWidgets(*page, database_id_, seen, charts)
                                    : Result<size_t>(Fail(page.error()));
      if (!widgets) {
        spdlog::error(
            "Failed to fetch the charts of the dashboard with id {}, keeping the {} "
            "found: {}",
            dashboard_id, charts.size(), widgets.error().message());
        break;
      }
      if (*widgets == 0) break;
      fluid_row += kFluidRowStep;
    }
    return charts;
  }

  std::string stream_;
  std::string base_url_;
  int64_t client_site_id_;
  int64_t database_id_;
  std::shared_ptr<HttpSession> session_;
};

}  // namespace

Status RegisterPeriscopeSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "periscope",
      .description = "Periscope Data (Sisense) dashboards, charts, views, users and databases, "
                     "through the web app's own endpoints.",
      .streams =
          {
              {"charts", false, "Widgets of every dashboard that query database_id."},
              {"dashboards_metadata", false, "Dashboards as the global search lists them."},
              {"dashboards", false, "Dashboards of the site."},
              {"databases", false, "Databases connected to the site."},
              {"users", false, "Users who own objects on the site."},
              {"views", false, "SQL views of the site."},
          },
      .config = {.fields = PeriscopeFields(), .unknown_keys = UnknownKeys::kWarn},
      .factory = [](const SourceContext& context) -> Result<std::unique_ptr<Source>> {
        OptionReader options(Option::Object("source", PeriscopeFields()), context.config);
        SecretMask::Global().Add(options.String("x_csrf_token"));
        Value config = context.config;
        config.Set("authentication", WireAuthentication(options));
        BIZON_RETURN_IF_ERROR(options.status());
        BIZON_ASSIGN_OR_RETURN(std::shared_ptr<HttpSession> session, MakeSourceSession(config));
        auto source =
            std::make_unique<PeriscopeSource>(context.stream, options, std::move(session));
        BIZON_RETURN_IF_ERROR(options.status());
        return source;
      },
  });
}

}  // namespace bizon
