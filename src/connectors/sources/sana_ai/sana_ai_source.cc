// sana_ai: a Sana Insights report, run as an asynchronous CSV export: create the job, poll it
// until it is done (or failed, or past the poll timeout), download the CSV and read its rows as
// records, all in one iteration. Reading the answers and the CSV: sana_ai_export.h.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "bizon/clock.h"
#include "bizon/config_spec.h"
#include "bizon/registry.h"
#include "connectors/registration.h"
#include "connectors/sources/sana_ai/sana_ai_export.h"
#include "http/json_page.h"
#include "http/source_session.h"

namespace bizon {
namespace {

Status SourceError(StatusCode code, std::string message) {
  return Status(code, std::move(message), FailureClass::kSource);
}

// "https://host:port" of a URL, lower-cased: where a bearer token may be sent.
std::string Origin(std::string_view url) {
  size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return "";
  size_t end = url.find_first_of("/?#", scheme + 3);
  std::string origin(url.substr(0, end));
  std::transform(origin.begin(), origin.end(), origin.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return origin;
}

class SanaAiSource final : public Source {
 public:
  SanaAiSource(std::string base_url, std::string query, double poll_interval, double poll_timeout,
               std::shared_ptr<HttpSession> session)
      : base_url_(std::move(base_url)),
        query_(std::move(query)),
        poll_interval_(poll_interval),
        poll_timeout_(poll_timeout),
        session_(std::move(session)) {}

  // As the original: the credentials and the query are first used by the export itself.
  Status CheckConnection() override { return Status::Ok(); }

  // The whole report in one iteration: there is no page to resume from.
  Result<SourceIteration> Get(const Value& pagination) override {
    (void)pagination;
    BIZON_ASSIGN_OR_RETURN(std::string job_id, CreateJob());
    BIZON_ASSIGN_OR_RETURN(std::string link, WaitForJob(job_id));
    BIZON_ASSIGN_OR_RETURN(std::string csv, Download(link));
    SourceIteration iteration;
    BIZON_ASSIGN_OR_RETURN(iteration.records, SanaReportRecords(csv, NowMicros()));
    spdlog::info("Sana export job {}: {} rows", job_id, iteration.records.size());
    return iteration;
  }

 private:
  Result<std::string> CreateJob() {
    std::string url = JoinUrl(base_url_, "reports/query");
    Value body(Value::Map{{"query", Value(query_)}, {"format", Value("csv")}});
    BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->PostJson(url, body.ToJson()));
    return ReadSanaJobId(JsonPage(std::move(response.body), "POST " + url));
  }

  // Polls every poll_interval_ until the job is final. The time spent counts both the waits as
  // configured and the clock, so the timeout holds whether or not waits are scaled (tests).
  Result<std::string> WaitForJob(const std::string& job_id) {
    std::string url = JoinUrl(base_url_, fmt::format("reports/jobs/{}", PercentEncode(job_id)));
    spdlog::info("Sana export job {} created; polling every {} s for at most {} s", job_id,
                 poll_interval_, poll_timeout_);
    auto started = std::chrono::steady_clock::now();
    double waited = 0;
    for (int polls = 1;; ++polls) {
      BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Get(url));
      BIZON_ASSIGN_OR_RETURN(SanaJobState state,
                             ReadSanaJobState(JsonPage(std::move(response.body), "GET " + url)));
      if (state.phase == SanaJobPhase::kSucceeded) return state.link_url;
      if (state.phase == SanaJobPhase::kFailed) {
        return Fail(SourceError(
            StatusCode::kFailedPrecondition,
            fmt::format("the Sana export job ended without a report: job {}, status '{}'{}", job_id,
                        state.status, state.error.empty() ? "" : ": " + state.error)));
      }
      double clock =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      double elapsed = std::max(waited, clock);
      if (elapsed + poll_interval_ > poll_timeout_) {
        return Fail(SourceError(
            StatusCode::kUnavailable,
            fmt::format("the Sana export job did not finish within source.poll_timeout ({} s): "
                        "job {}, still '{}' after {} polls",
                        poll_timeout_, job_id, state.status, polls)));
      }
      spdlog::debug("Sana export job {} is '{}'; next poll in {} s", job_id, state.status,
                    poll_interval_);
      session_->sleep()(poll_interval_);
      waited += poll_interval_;
    }
  }

  // The link is fetched with the bearer token only when it points at the API's own origin (the
  // original sends it everywhere; a pre-signed storage URL needs none and must not see it).
  Result<std::string> Download(const std::string& link) {
    HttpRequest request{.method = "GET", .url = link};
    request.authenticate = Origin(link) == Origin(base_url_);
    BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Send(request));
    return std::move(response.body);
  }

  std::string base_url_;
  std::string query_;
  double poll_interval_;
  double poll_timeout_;
  std::shared_ptr<HttpSession> session_;
};

/// The sana_ai source's options, declared once: the registry's spec and the reader both use it.
std::vector<FieldSpec> SanaAiFields() {
  return {
      Option::String("domain", "Workspace subdomain, as in <domain>.sana.ai.")
          .Required()
          .NotNull()
          .Example("acme"),
      Option::String("query", "SQL query the report runs.").Required().NotNull(),
      // OAuth client credentials against the workspace token endpoint.
      AuthenticationField({"oauth"}, /*required=*/true),
      // Every 3 s, as the original polls.
      Option::Number("poll_interval", "Seconds between two polls of the export job.")
          .NotNull()
          .Default(3.0)
          .Minimum(0.1),
      // The original waits forever.
      Option::Number("poll_timeout", "Seconds to wait for the export job before the run fails.")
          .NotNull()
          .Default(3600.0)
          .Minimum(1),
      Option::String("base_url",
                     "Root of the API; unset means https://<domain>.sana.ai/api/v1. Change it "
                     "only to point at a test server."),
  };
}

}  // namespace

Status RegisterSanaAiSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "sana_ai",
      .description = "Sana Insight report: runs a query as a CSV export and reads its rows.",
      .streams = {{"insight_report", false, "Rows of the query's result."}},
      .config = {.fields = SanaAiFields(), .unknown_keys = UnknownKeys::kWarn},
      .factory = [](const SourceContext& context) -> Result<std::unique_ptr<Source>> {
        OptionReader options(Option::Object("source", SanaAiFields()), context.config);
        // Declared without a default: unset (or empty) means the workspace's own API.
        std::string base_url;
        if (options.Find("base_url") != nullptr) base_url = options.String("base_url");
        if (base_url.empty()) {
          base_url = fmt::format("https://{}.sana.ai/api/v1", options.String("domain"));
        }
        std::string query = options.String("query");
        double poll_interval = options.Number("poll_interval");
        double poll_timeout = options.Number("poll_timeout");
        BIZON_RETURN_IF_ERROR(options.status());
        BIZON_ASSIGN_OR_RETURN(
            std::shared_ptr<HttpSession> session,
            MakeSourceSession(context.config, {.auth = {.allowed_types = {"oauth"}}}));
        return std::make_unique<SanaAiSource>(std::move(base_url), std::move(query), poll_interval,
                                              poll_timeout, std::move(session));
      },
  });
}

}  // namespace bizon
