// gbif: occurrence records of the Global Biodiversity Information Facility (API v1), a public API
// used as a load generator. Offset-paginated; GBIF refuses offsets past 100,000, which caps a run.
#include <fmt/format.h>

#include <algorithm>

#include "bizon/clock.h"
#include "bizon/config_spec.h"
#include "bizon/registry.h"
#include "connectors/registration.h"
#include "http/json_page.h"
#include "http/source_session.h"

namespace bizon {
namespace {

constexpr int64_t kMaxPageSize = 300;    // The search endpoint's largest `limit`.
constexpr int64_t kMaxOffset = 100'000;  // GBIF's deep-paging limit.

class GbifSource final : public Source {
 public:
  GbifSource(std::string search_url, int64_t page_limit, int64_t max_records,
             std::shared_ptr<HttpSession> session)
      : search_url_(std::move(search_url)),
        page_size_(std::min(page_limit, kMaxPageSize)),
        cap_(std::min(max_records, kMaxOffset)),
        session_(std::move(session)) {}

  Status CheckConnection() override {
    auto count = Count();
    return count ? Status::Ok() : count.error();
  }

  std::optional<int64_t> TotalRecordsCount() override {
    auto count = Count();
    return count ? std::optional<int64_t>(*count) : std::nullopt;
  }

  Result<SourceIteration> Get(const Value& pagination) override {
    int64_t offset = pagination.GetInteger("offset", 0);
    int64_t limit = std::min(page_size_, cap_ - offset);
    SourceIteration iteration;
    if (limit <= 0) return iteration;
    QueryParams query = {{"limit", std::to_string(limit)}, {"offset", std::to_string(offset)}};
    std::string origin = "GET " + AppendQuery(search_url_, query);
    BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Get(search_url_, std::move(query)));
    JsonPage page(std::move(response.body), std::move(origin));
    int64_t now = NowMicros();
    BIZON_RETURN_IF_ERROR(page.ForEachObject(
        "results", {"key", "gbifID"},
        [&](const JsonObjectView& record) {
          // The occurrence key, else its gbifID, else its position.
          std::string id;
          for (const std::optional<Value>& field : record.fields) {
            if (!field || field->is_null()) continue;
            id =
                field->is_integer() ? std::to_string(field->AsInteger()) : field->ToDisplayString();
            break;
          }
          if (id.empty()) id = fmt::format("{}_{}", offset, record.index);
          iteration.records.Add(id, record.json, now);
          return Status::Ok();
        },
        /*missing_is_empty=*/true));
    // A missing endOfRecords counts as the end.
    BIZON_ASSIGN_OR_RETURN(std::optional<Value> end, page.Find("endOfRecords"));
    bool end_of_records = !end || !end->is_bool() || end->AsBool();
    if (!end_of_records && offset + limit < cap_) {
      iteration.next_pagination = Value(Value::Map{{"offset", Value(offset + limit)}});
    }
    return iteration;
  }

 private:
  Result<int64_t> Count() {
    std::string origin = "GET " + AppendQuery(search_url_, {{"limit", "0"}});
    BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Get(search_url_, {{"limit", "0"}}));
    JsonPage page(std::move(response.body), std::move(origin));
    BIZON_ASSIGN_OR_RETURN(std::optional<Value> count, page.Find("count"));
    if (!count || !count->is_integer()) {
      return Fail(Status(StatusCode::kFailedPrecondition,
                         fmt::format("the response of {} has no integer 'count'", origin),
                         FailureClass::kSource));
    }
    return count->AsInteger();
  }

  std::string search_url_;
  int64_t page_size_;
  int64_t cap_;
  std::shared_ptr<HttpSession> session_;
};

/// The gbif source's options, declared once: the registry's spec and the reader both use it.
std::vector<FieldSpec> GbifFields() {
  return {
      Option::Integer("page_limit",
                      "Records per request; values above 300 (the API maximum) are read as 300.")
          .NotNull()
          .Default(kMaxPageSize)
          .Minimum(1),
      Option::Integer("max_records",
                      "Stop after this many records; values above 100,000 (GBIF's paging limit) "
                      "are read as 100,000.")
          .Default(kMaxOffset)
          .Minimum(1),
      Option::String("base_url",
                     "Root of the API; change it only to point at a mirror or a test server.")
          .NotNull()
          .Default("https://api.gbif.org/v1"),
  };
}

}  // namespace

Status RegisterGbifSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "gbif",
      .description = "GBIF occurrence search, a public API without authentication; at most "
                     "100,000 records per run (its paging limit).",
      .streams = {{"occurrence", false, "Occurrence records, offset-paginated."}},
      .config = {.fields = GbifFields(), .unknown_keys = UnknownKeys::kWarn},
      .factory = [](const SourceContext& context) -> Result<std::unique_ptr<Source>> {
        OptionReader options(Option::Object("source", GbifFields()), context.config);
        std::string search_url = JoinUrl(options.String("base_url"), "occurrence/search");
        int64_t page_limit = options.Integer("page_limit");
        int64_t max_records = options.Integer("max_records");
        BIZON_RETURN_IF_ERROR(options.status());
        BIZON_ASSIGN_OR_RETURN(std::shared_ptr<HttpSession> session,
                               MakeSourceSession(context.config, {.use_authentication = false}));
        return std::make_unique<GbifSource>(std::move(search_url), page_limit, max_records,
                                            std::move(session));
      },
  });
}

}  // namespace bizon
