// rest_api: a JSON API described in the pipeline's YAML alone. Each entry of `endpoints` is a
// stream (its key is the `source.stream` name); see README.md for the options.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bizon/config_spec.h"
#include "bizon/registry.h"
#include "bizon/secret_mask.h"
#include "connectors/registration.h"
#include "connectors/sources/rest_api/rest_endpoint.h"
#include "http/source_session.h"

namespace bizon {
namespace {

// The entries of a params or headers block. A value written in the YAML under a credential's
// name (`api_key: sk_live_...`, `X-Api-Key`) is registered with the secret mask: the URLs and
// headers of failed requests are quoted in logs and errors.
QueryParams ParamsOf(const Value* map) {
  QueryParams params;
  if (map == nullptr || !map->is_map()) return params;
  for (const auto& [key, value] : map->AsMap()) {
    if (value.is_null()) continue;
    params.emplace_back(key, value.ToDisplayString());
    if (LooksLikeCredentialName(key)) SecretMask::Global().Add(params.back().second);
  }
  return params;
}

Result<PaginationSpec> PaginationOf(const Value* block) {
  PaginationSpec spec;
  if (block == nullptr || !block->is_map()) return spec;
  std::string type = block->GetString("type", "none");
  if (type == "none") return spec;
  spec.has_more_path = block->GetString("has_more_path");
  spec.total_path = block->GetString("total_path");
  if (type == "offset") {
    spec.type = PaginationSpec::Type::kOffset;
    spec.offset_param = block->GetString("offset_param", "offset");
    spec.limit_param = block->GetString("limit_param", "limit");
    spec.limit = block->GetInteger("limit", 100);
    spec.start_offset = block->GetInteger("start_offset", 0);
  } else if (type == "page_number") {
    spec.type = PaginationSpec::Type::kPageNumber;
    spec.page_param = block->GetString("page_param", "page");
    spec.start_page = block->GetInteger("start_page", 1);
    spec.page_size_param = block->GetString("page_size_param");
    spec.page_size = block->GetInteger("page_size", 0);
  } else if (type == "cursor") {
    spec.type = PaginationSpec::Type::kCursor;
    spec.cursor_param = block->GetString("cursor_param", "cursor");
    spec.cursor_path = block->GetString("cursor_path", "next_cursor");
    spec.cursor_in_body = block->GetString("location", "query") == "body";
  } else if (type == "next_url") {
    spec.type = PaginationSpec::Type::kNextUrl;
    spec.next_url_path = block->GetString("next_url_path", "next");
  } else if (type == "link_header") {
    spec.type = PaginationSpec::Type::kLinkHeader;
  } else {
    return Fail(InvalidArgumentError(fmt::format("unknown pagination type '{}'", type)));
  }
  return spec;
}

Result<EndpointSpec> EndpointOf(const Value& source, const std::string& stream) {
  const Value* endpoints = source.Find("endpoints");
  const Value* endpoint = endpoints != nullptr ? endpoints->Find(stream) : nullptr;
  if (endpoint == nullptr || !endpoint->is_map()) {
    std::string names;
    if (endpoints != nullptr && endpoints->is_map()) {
      for (const auto& [name, unused] : endpoints->AsMap()) {
        names += (names.empty() ? "" : ", ") + name;
      }
    }
    return Fail(InvalidArgumentError(
        fmt::format("'{}' is not one of the endpoints of this rest_api source ({})", stream,
                    names.empty() ? "none declared" : names)));
  }
  EndpointSpec spec;
  spec.name = stream;
  spec.url = JoinUrl(source.GetString("base_url"), endpoint->GetString("path"));
  spec.method = endpoint->GetString("method", "GET");
  spec.params = ParamsOf(source.Find("params"));
  QueryParams own = ParamsOf(endpoint->Find("params"));
  spec.params.insert(spec.params.end(), own.begin(), own.end());
  for (const auto& [name, value] : ParamsOf(endpoint->Find("headers"))) {
    spec.headers.emplace_back(name, value);
  }
  if (const Value* body = endpoint->Find("body"); body != nullptr && !body->is_null()) {
    spec.body = *body;
  }
  spec.record_selector = endpoint->GetString("record_selector", "");
  spec.record_id = endpoint->GetString("record_id", "id");
  BIZON_ASSIGN_OR_RETURN(spec.pagination, PaginationOf(endpoint->Find("pagination")));
  if (spec.pagination.cursor_in_body && spec.method != "POST") {
    return Fail(InvalidArgumentError(
        fmt::format("endpoint '{}': pagination.location body needs method POST", stream)));
  }
  if (const Value* incremental = endpoint->Find("incremental");
      incremental != nullptr && incremental->is_map()) {
    IncrementalSpec window;
    window.param = incremental->GetString("param");
    window.end_param = incremental->GetString("end_param");
    window.format = incremental->GetString("format", "iso8601");
    window.cursor_field = incremental->GetString("cursor_field", source.GetString("cursor_field"));
    spec.incremental = window;
  }
  return spec;
}

class RestApiSource final : public Source {
 public:
  RestApiSource(RestEndpoint endpoint, std::string total_path)
      : endpoint_(std::move(endpoint)), total_path_(std::move(total_path)) {}

  std::optional<int64_t> TotalRecordsCount() override {
    if (total_path_.empty()) return std::nullopt;
    auto total = endpoint_.ReadFirstPage(total_path_);
    if (!total) {
      spdlog::warn("Could not read the total record count: {}", total.error().message());
      return std::nullopt;
    }
    if (!*total || !(*total)->is_number()) return std::nullopt;
    return static_cast<int64_t>((*total)->AsDouble());
  }

  Result<SourceIteration> Get(const Value& pagination) override {
    return endpoint_.Fetch(pagination);
  }

  Result<SourceIteration> GetRecordsAfter(const IncrementalState& state,
                                          const Value& pagination) override {
    return endpoint_.FetchAfter(state, pagination);
  }

 private:
  RestEndpoint endpoint_;
  std::string total_path_;
};

FieldSpec StringField(std::string name, std::string description, std::string fallback = "") {
  FieldSpec field{
      .name = std::move(name), .type = FieldType::kString, .description = std::move(description)};
  if (!fallback.empty()) field.default_value = Value(std::move(fallback));
  return field;
}

FieldSpec PaginationField() {
  FieldSpec has_more =
      StringField("has_more_path", "Path of a boolean that is false on the last page.");
  auto variant = [](std::string tag, std::string description, std::vector<FieldSpec> fields) {
    fields.insert(fields.begin(), FieldSpec{.name = "type", .type = FieldType::kString});
    return VariantSpec{
        .tag = std::move(tag), .description = std::move(description), .fields = std::move(fields)};
  };
  return {
      .name = "pagination",
      .type = FieldType::kObject,
      .description = "How the next page is requested.",
      .default_value = Value(Value::Map{{"type", "none"}}),
      .discriminator = "type",
      .variants =
          {
              variant("none", "A single page.", {}),
              variant("offset", "offset/limit query parameters.",
                      {StringField("offset_param", "Query parameter of the offset.", "offset"),
                       StringField("limit_param", "Query parameter of the page size.", "limit"),
                       {.name = "limit",
                        .type = FieldType::kInteger,
                        .description = "Records asked for per page.",
                        .default_value = 100,
                        .minimum = 1},
                       {.name = "start_offset",
                        .type = FieldType::kInteger,
                        .description = "Offset of the first page.",
                        .default_value = 0,
                        .minimum = 0},
                       has_more,
                       StringField("total_path",
                                   "Path of the total record count; the last page is the one "
                                   "that reaches it.")}),
              variant("page_number", "A page number query parameter.",
                      {StringField("page_param", "Query parameter of the page number.", "page"),
                       {.name = "start_page",
                        .type = FieldType::kInteger,
                        .description = "Number of the first page.",
                        .default_value = 1},
                       StringField("page_size_param", "Query parameter of the page size."),
                       {.name = "page_size",
                        .type = FieldType::kInteger,
                        .description = "Records per page; a shorter page is the last.",
                        .minimum = 1},
                       has_more}),
              variant("cursor", "A cursor read from each page and sent with the next request.",
                      {StringField("cursor_param", "Parameter carrying the cursor.", "cursor"),
                       StringField("cursor_path", "Path of the next cursor in the response.",
                                   "next_cursor"),
                       {.name = "location",
                        .type = FieldType::kEnum,
                        .description = "query (default), or body for a POST JSON body.",
                        .default_value = "query",
                        .enum_values = {"query", "body"}},
                       has_more}),
              variant("next_url", "The URL of the next page, read from the response.",
                      {StringField("next_url_path", "Path of the next page's URL.", "next")}),
              variant("link_header", "The rel=\"next\" link of the Link header.", {}),
          },
      .default_variant = "none",
  };
}

FieldSpec EndpointField() {
  return {
      .name = "endpoint",
      .type = FieldType::kObject,
      .description = "One endpoint, read as the stream of the same name.",
      .fields =
          {
              {.name = "path",
               .type = FieldType::kString,
               .description = "Path below base_url, or an absolute URL.",
               .required = true,
               .example = "/v1/users"},
              {.name = "method",
               .type = FieldType::kEnum,
               .description = "HTTP method.",
               .default_value = "GET",
               .enum_values = {"GET", "POST"}},
              {.name = "params",
               .type = FieldType::kMap,
               .description = "Query parameters of this endpoint.",
               .default_value = Value::EmptyMap()},
              {.name = "headers",
               .type = FieldType::kMap,
               .description = "Headers of this endpoint.",
               .default_value = Value::EmptyMap(),
               .items = {{.type = FieldType::kString}}},
              {.name = "body",
               .type = FieldType::kAny,
               .description = "JSON body sent with a POST."},
              StringField("record_selector",
                          "Dotted path of the records array in the response; empty when the "
                          "response is the array.",
                          ""),
              {.name = "record_id",
               .type = FieldType::kString,
               .description = "Dotted path of each record's id; empty leaves ids empty.",
               .default_value = "id"},
              PaginationField(),
              {.name = "incremental",
               .type = FieldType::kObject,
               .description = "How an incremental run asks for records changed since the "
                              "last one.",
               .fields = {{.name = "param",
                           .type = FieldType::kString,
                           .description = "Query parameter receiving the window start.",
                           .required = true},
                          StringField("end_param",
                                      "Query parameter receiving the window end (this run's "
                                      "start)."),
                          StringField("format",
                                      "iso8601, unix, unix_ms, date, or a strftime format.",
                                      "iso8601"),
                          StringField("cursor_field",
                                      "Record field whose largest value starts the next "
                                      "window (default: source.cursor_field).")}},
              StringField("total_path", "Path of the total record count, for progress."),
          },
  };
}

}  // namespace

Status RegisterRestApiSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "rest_api",
      .description = "Any JSON API over HTTP, described in YAML: endpoints, pagination, auth.",
      .streams = {{.name = "endpoint",
                   .supports_incremental = true,
                   .description = "Example: stream names are the keys of `endpoints`."}},
      .streams_from_config = true,
      .check_stream =
          [](const Value& source_config, const std::string& stream) {
            auto endpoint = EndpointOf(source_config, stream);
            return endpoint ? Status::Ok() : endpoint.error();
          },
      .config =
          {
              .fields =
                  {
                      {.name = "base_url",
                       .type = FieldType::kString,
                       .description = "URL the endpoint paths are relative to.",
                       .required = true,
                       .example = "https://api.example.com"},
                      {.name = "headers",
                       .type = FieldType::kMap,
                       .description = "Headers sent with every request.",
                       .default_value = Value::EmptyMap(),
                       .items = {{.type = FieldType::kString}}},
                      {.name = "params",
                       .type = FieldType::kMap,
                       .description = "Query parameters sent with every request.",
                       .default_value = Value::EmptyMap()},
                      {.name = "endpoints",
                       .type = FieldType::kMap,
                       .description = "The streams: endpoint name to its description.",
                       .required = true,
                       .items = {EndpointField()}},
                  },
              .unknown_keys = UnknownKeys::kWarn,
          },
      .factory = [](const SourceContext& context) -> Result<std::unique_ptr<Source>> {
        BIZON_ASSIGN_OR_RETURN(EndpointSpec spec, EndpointOf(context.config, context.stream));
        if (context.sync_mode == SyncMode::kIncremental && !spec.incremental) {
          return Fail(InvalidArgumentError(fmt::format(
              "source.endpoints.{}: an incremental run needs an incremental block (the query "
              "parameter that receives the window start)",
              context.stream)));
        }
        SourceSessionOptions options;
        for (const auto& [name, value] : ParamsOf(context.config.Find("headers"))) {
          options.default_headers.emplace_back(name, value);
        }
        BIZON_ASSIGN_OR_RETURN(std::shared_ptr<HttpSession> session,
                               MakeSourceSession(context.config, std::move(options)));
        const Value* endpoint = context.config.FindPath("endpoints");
        std::string total_path = endpoint != nullptr && endpoint->Find(context.stream) != nullptr
                                     ? endpoint->Find(context.stream)->GetString("total_path")
                                     : "";
        return std::make_unique<RestApiSource>(RestEndpoint(std::move(spec), std::move(session)),
                                               std::move(total_path));
      },
  });
}

}  // namespace bizon
