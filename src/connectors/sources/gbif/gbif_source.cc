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

constexpr std::string_view kDefaultBaseUrl = "https://api.gbif.org/v1";
constexpr int64_t kMaxPageSize = 300;    // The search endpoint's largest `limit`.
constexpr int64_t kMaxOffset = 100'000;  // GBIF's deep-paging limit.

class GbifSource final : public Source {
 public:
  GbifSource(std::string search_url, int64_t page_limit, std::optional<int64_t> max_records,
             std::shared_ptr<HttpSession> session)
      : search_url_(std::move(search_url)),
        page_size_(std::min(page_limit, kMaxPageSize)),
        cap_(std::min(max_records.value_or(kMaxOffset), kMaxOffset)),
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

}  // namespace

Status RegisterGbifSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "gbif",
      .description = "GBIF occurrence search, a public API without authentication; at most "
                     "100,000 records per run (its paging limit).",
      .streams = {{"occurrence", false, "Occurrence records, offset-paginated."}},
      .config =
          {
              .fields =
                  {
                      {.name = "page_limit",
                       .type = FieldType::kInteger,
                       .description = "Records per request; values above 300 (the API maximum) "
                                      "are read as 300.",
                       .nullable = false,
                       .default_value = 300,
                       .minimum = 1},
                      {.name = "max_records",
                       .type = FieldType::kInteger,
                       .description = "Stop after this many records; unset or above 100,000 "
                                      "means 100,000.",
                       .minimum = 1},
                      {.name = "base_url",
                       .type = FieldType::kString,
                       .description = "Root of the API; change it only to point at a mirror or "
                                      "a test server.",
                       .nullable = false,
                       .default_value = Value(kDefaultBaseUrl)},
                  },
              .unknown_keys = UnknownKeys::kWarn,
          },
      .factory = [](const SourceContext& context) -> Result<std::unique_ptr<Source>> {
        BIZON_ASSIGN_OR_RETURN(std::shared_ptr<HttpSession> session,
                               MakeSourceSession(context.config, {.use_authentication = false}));
        const Value* max_records = context.config.Find("max_records");
        std::optional<int64_t> cap;
        if (max_records != nullptr && max_records->is_integer()) cap = max_records->AsInteger();
        return std::make_unique<GbifSource>(
            JoinUrl(context.config.GetString("base_url", kDefaultBaseUrl), "occurrence/search"),
            context.config.GetInteger("page_limit", 300), cap, std::move(session));
      },
  });
}

}  // namespace bizon
