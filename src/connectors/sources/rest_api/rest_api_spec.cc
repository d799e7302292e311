#include "connectors/sources/rest_api/rest_api_spec.h"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bizon/secret_mask.h"
#include "http/url.h"

namespace bizon {
namespace {

VariantSpec Variant(std::string tag, std::string description, std::vector<FieldSpec> fields) {
  fields.insert(fields.begin(), Option::String("type"));
  return VariantSpec{
      .tag = std::move(tag), .description = std::move(description), .fields = std::move(fields)};
}

FieldSpec Location(std::string what) {
  return Option::Enum("location", {"query", "body"},
                      fmt::format("Where the {} goes: the query string, or the JSON body of a "
                                  "POST.",
                                  what))
      .Default("query");
}

FieldSpec StopAfterEmptyPage() {
  return Option::Boolean("stop_after_empty_page",
                         "An empty page is the last; false goes on past empty pages until "
                         "total_path, has_more_path or the maximum says so.")
      .Default(true);
}

FieldSpec HasMorePath() {
  return Option::String("has_more_path", "Path of a boolean that is false on the last page.");
}

VariantSpec OffsetVariant() {
  return Variant(
      "offset", "offset/limit parameters.",
      {Option::String("offset_param", "Parameter of the offset.").Default("offset"),
       Option::String("limit_param", "Parameter of the page size.").Default("limit"),
       Option::Integer("limit", "Records asked for per page.").Default(100).Minimum(1),
       Option::Integer("start_offset", "Offset of the first page.").Default(0).Minimum(0),
       HasMorePath(),
       Option::String("total_path",
                      "Path of the total record count; the last page is the one that reaches it."),
       Option::Integer("maximum_offset", "No page is asked for at or past this offset.").Minimum(1),
       StopAfterEmptyPage(), Location("offset and limit")});
}

VariantSpec PageNumberVariant() {
  return Variant(
      "page_number", "A page number parameter.",
      {Option::String("page_param", "Parameter of the page number.").Default("page"),
       Option::Integer("start_page", "Number of the first page.").Default(1),
       Option::String("page_size_param", "Parameter of the page size."),
       Option::Integer("page_size", "Records per page; a shorter page is the last.").Minimum(1),
       HasMorePath(),
       Option::String("total_path", "Path of the total page count; its page is the last."),
       Option::Integer("maximum_page", "The last page asked for."), StopAfterEmptyPage(),
       Location("page number and size")});
}

FieldSpec PaginationField() {
  return Option::Variants(
             "pagination", "type",
             {
                 Variant("none", "A single page.", {}),
                 OffsetVariant(),
                 PageNumberVariant(),
                 Variant("cursor", "A cursor read from each page and sent with the next request.",
                         {Option::String("cursor_param", "Parameter carrying the cursor.")
                              .Default("cursor"),
                          Option::String("cursor_path", "Path of the next cursor in the response.")
                              .Default("next_cursor"),
                          Location("cursor"), HasMorePath()}),
                 Variant("next_url", "The URL of the next page, read from the response.",
                         {Option::String("next_url_path", "Path of the next page's URL.")
                              .Default("next")}),
                 Variant("link_header", "The rel=\"next\" link of the Link header.", {}),
             },
             "How the next page is requested.")
      .Default(Value(Value::Map{{"type", "none"}}))
      .DefaultVariant("none");
}

std::vector<FieldSpec> WindowFields(bool param_required) {
  Option param = Option::String("param", "Query parameter receiving the window start.");
  if (param_required) param.Required();
  return {param,
          Option::String("end_param",
                         "Query parameter receiving the window end (end_value, else this run's "
                         "start)."),
          Option::String("format", "iso8601, unix, unix_ms, date, or a strftime format.")
              .Default("iso8601"),
          Option::String("cursor_field",
                         "Record field whose largest value starts the next window (default: "
                         "source.cursor_field).")};
}

FieldSpec ResourceIncrementalField() {
  std::vector<FieldSpec> fields = WindowFields(false);
  std::vector<FieldSpec> more = {
      {.name = "initial_value",
       .type = FieldType::kAny,
       .description = "The window start of a first run (and the earliest a lag reaches back to)."},
      {.name = "end_value",
       .type = FieldType::kAny,
       .description = "Records at or past it are left out: with initial_value, a closed "
                      "backfill range, which neither reads nor moves the stored cursor."},
      Option::Number("lag",
                     "Each run starts this far before the stored cursor, to catch late rows: "
                     "seconds for timestamps, days for dates, units for numbers. Rows read again "
                     "are recognised by (cursor, record_id) and skipped.")
          .Default(0)
          .Minimum(0),
      Option::Enum("row_order", {"asc", "desc"},
                   "The order the API returns rows by cursor: paging stops at the first row past "
                   "the range."),
      Option::Enum("on_cursor_value_missing", {"raise", "include", "exclude"},
                   "A record without the cursor field fails the run, is kept, or is left out.")
          .Default("raise"),
  };
  fields.insert(fields.end(), more.begin(), more.end());
  return Option::Object("incremental", std::move(fields),
                        "Which records are new: a cursor field, its window and its state.");
}

// The keys an endpoints entry and a resource share.
std::vector<FieldSpec> EndpointFields(bool resource) {
  Option path =
      Option::String("path", "Path below base_url, or an absolute URL.").Example("/v1/users");
  if (!resource) path.Required();
  Option record_selector =
      resource ? Option::String("record_selector",
                                "Where the records are: a dotted path or a JSONPath "
                                "($.data[*].items). Unset: the page itself when it is a list, "
                                "else its largest top-level list (logged), else the page as one "
                                "record.")
               : Option::String("record_selector",
                                "Dotted path (or JSONPath) of the records array in the response; "
                                "empty when the response is the array.")
                     .Default("");
  return {
      path,
      Option::Enum("method", {"GET", "POST"}, "HTTP method.").Default("GET"),
      Option::Map("params", "Query parameters.").Default(Value::EmptyMap()),
      Option::Map("headers", "Headers.").Default(Value::EmptyMap()).Items(Option::String("")),
      {.name = "body", .type = FieldType::kAny, .description = "JSON body sent with a POST."},
      record_selector,
      Option::String("record_id", "Dotted path of each record's id; empty leaves ids empty.")
          .Default("id"),
      PaginationField(),
  };
}

FieldSpec EndpointField() {
  std::vector<FieldSpec> fields = EndpointFields(false);
  fields.push_back(Option::Object("incremental", WindowFields(true),
                                  "How an incremental run asks for records changed since the "
                                  "last one."));
  fields.push_back(Option::String("total_path", "Path of the total record count, for progress."));
  return Option::Object("endpoint", std::move(fields),
                        "One endpoint, read as the stream of the same name.");
}

FieldSpec ResponseActionField() {
  return Option::Object(
      "response_action",
      {Option::Integer("status_code", "The HTTP status it applies to.").Minimum(100).Maximum(599),
       Option::String("content", "A text the response body must contain."),
       Option::Enum("action", {"ignore", "retry", "fail", "python"},
                    "ignore: the response ends this request's records (none); retry: send it "
                    "again with the policy's backoff; fail: stop the run, quoting the response; "
                    "python: the function `on_response` of `python` decides.")
           .Required(),
       Option::String("python",
                      "With action python: code defining on_response(response), called with "
                      "{status_code, headers, body, method, url}; it returns ignore, retry, fail, "
                      "None (the next action decides) or the JSON to use as the page.")});
}

FieldSpec AuthField() {
  return Option::Variants(
      "auth", "type",
      {Variant("bearer", "Authorization: Bearer <token>.",
               {Option::String("token", "The token.").Required().Secret()}),
       Variant("api_key", "A key in a header or in the query string.",
               {Option::String("name", "Header or query parameter name.").Default("Authorization"),
                Option::String("api_key", "The key.").Required().Secret(),
                Option::Enum("location", {"header", "query"}, "Where the key goes.")
                    .Default("header")}),
       Variant("basic", "HTTP basic authentication.",
               {Option::String("username", "The user name.").Required(),
                Option::String("password", "The password.").Default("").Secret()})},
      "This resource's own credentials, instead of the source's `authentication`.");
}

// Every key of a resource, with its defaults.
std::vector<FieldSpec> ResourceFields() {
  std::vector<FieldSpec> fields = {
      Option::String("name", "The resource's name: placeholders and children refer to it.")
          .Required()};
  for (FieldSpec& field : EndpointFields(true)) fields.push_back(std::move(field));
  std::vector<FieldSpec> more = {
      ResourceIncrementalField(),
      Option::String("destination_id", "Where its records go (default: the resource's name)."),
      Option::List("include_from_parent", Option::String("field"),
                   "Fields of the parent record copied into each record as "
                   "_<parent>_<field>."),
      Option::Integer("parallel",
                      "Requests of this child resource in flight at once (one per parent "
                      "record), under the session's retry policy; a Retry-After pauses them all.")
          .Default(4)
          .Minimum(1)
          .Maximum(64),
      Option::List("response_actions", ResponseActionField(),
                   "What to do with responses matched by status code or content, first match "
                   "wins; an unmatched error status fails as usual."),
      AuthField(),
  };
  fields.insert(fields.end(), more.begin(), more.end());
  return fields;
}

// `fields` without defaults, each default named in its description instead; `keep_required`
// false drops `required` too (resource_defaults) and the name.
std::vector<FieldSpec> WithoutDefaults(std::vector<FieldSpec> fields, bool keep_required) {
  std::vector<FieldSpec> out;
  for (FieldSpec& field : fields) {
    if (!keep_required && field.name == "name") continue;
    if (field.default_value) {
      field.description += fmt::format(" Default: {}.", field.default_value->ToJson());
      field.default_value.reset();
    }
    if (!keep_required) field.required = false;
    out.push_back(std::move(field));
  }
  return out;
}

}  // namespace

const FieldSpec& ResourceDeclaration() {
  static const FieldSpec kDeclaration = Option::Object("resource", ResourceFields());
  return kDeclaration;
}

const FieldSpec& ResourceAuthDeclaration() {
  static const FieldSpec kDeclaration = AuthField();
  return kDeclaration;
}

ConfigSpec RestApiConfig() {
  return {
      .fields =
          {
              Option::String("base_url", "URL the paths are relative to.")
                  .Required()
                  .Example("https://api.example.com"),
              Option::Map("headers", "Headers sent with every request.")
                  .Default(Value::EmptyMap())
                  .Items(Option::String("")),
              Option::Map("params", "Query parameters sent with every request.")
                  .Default(Value::EmptyMap()),
              Option::Map("endpoints",
                          "The endpoints form: endpoint name to its description, one per stream "
                          "(source.stream names it). Either endpoints or resources.")
                  .Items(EndpointField()),
              Option::List("resources",
                           Option::Object("resource", WithoutDefaults(ResourceFields(), true)),
                           "The resources form: every resource read in one run, each into its "
                           "own destination_id; source.stream names the run. Either endpoints "
                           "or resources."),
              Option::Object("resource_defaults", WithoutDefaults(ResourceFields(), false),
                             "Keys every resource gets unless it sets them (params and headers "
                             "are merged key by key)."),
          },
      .unknown_keys = UnknownKeys::kWarn,
  };
}

const FieldSpec& RestApiDeclaration() {
  static const FieldSpec kDeclaration = Option::Object("source", RestApiConfig().fields);
  return kDeclaration;
}

std::string TextIfSet(OptionReader& options, std::string_view name) {
  const Value* value = options.Find(name);
  return value != nullptr ? value->ToDisplayString() : std::string();
}

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

namespace {

// has_more_path and where the paging parameters go: the keys offset, page_number and cursor
// share.
void ReadPagingStop(OptionReader& block, PaginationSpec& spec) {
  spec.has_more_path = TextIfSet(block, "has_more_path");
  spec.in_body = block.String("location") == "body";
}

// The keys offset and page_number share: those of ReadPagingStop, total_path and the empty-page
// stop.
void ReadPageBounds(OptionReader& block, PaginationSpec& spec) {
  ReadPagingStop(block, spec);
  spec.total_path = TextIfSet(block, "total_path");
  spec.past_empty_pages = !block.Boolean("stop_after_empty_page");
}

std::optional<int64_t> IntegerIfSet(OptionReader& block, std::string_view name) {
  const Value* value = block.Find(name);
  if (value == nullptr || !value->is_integer()) return std::nullopt;
  return value->AsInteger();
}

}  // namespace

Result<PaginationSpec> PaginationOf(OptionReader block) {
  PaginationSpec spec;
  const std::string& type = block.Variant();
  if (type == "offset") {
    spec.type = PaginationSpec::Type::kOffset;
    ReadPageBounds(block, spec);
    spec.offset_param = block.String("offset_param");
    spec.limit_param = block.String("limit_param");
    spec.limit = block.Integer("limit");
    spec.start_offset = block.Integer("start_offset");
    spec.maximum_offset = IntegerIfSet(block, "maximum_offset");
  } else if (type == "page_number") {
    spec.type = PaginationSpec::Type::kPageNumber;
    ReadPageBounds(block, spec);
    spec.page_param = block.String("page_param");
    spec.start_page = block.Integer("start_page");
    spec.page_size_param = TextIfSet(block, "page_size_param");
    spec.page_size = IntegerIfSet(block, "page_size");
    spec.maximum_page = IntegerIfSet(block, "maximum_page");
  } else if (type == "cursor") {
    spec.type = PaginationSpec::Type::kCursor;
    ReadPagingStop(block, spec);
    spec.cursor_param = block.String("cursor_param");
    spec.cursor_path = block.String("cursor_path");
  } else if (type == "next_url") {
    spec.type = PaginationSpec::Type::kNextUrl;
    spec.next_url_path = block.String("next_url_path");
  } else if (type == "link_header") {
    spec.type = PaginationSpec::Type::kLinkHeader;
  } else if (type != "none") {
    return Fail(InvalidArgumentError(fmt::format("unknown pagination type '{}'", type)));
  }
  BIZON_RETURN_IF_ERROR(block.status());
  return spec;
}

IncrementalSpec WindowOf(OptionReader& block, const std::string& source_cursor_field) {
  IncrementalSpec window;
  window.param = TextIfSet(block, "param");
  window.end_param = TextIfSet(block, "end_param");
  window.format = block.String("format");
  // Declared without a default: its default is another option's value.
  const Value* cursor_field = block.Find("cursor_field");
  window.cursor_field =
      cursor_field != nullptr ? cursor_field->ToDisplayString() : source_cursor_field;
  return window;
}

IncrementalSpec ResourceIncrementalOf(OptionReader block, const std::string& source_cursor_field) {
  IncrementalSpec window = WindowOf(block, source_cursor_field);
  if (const Value* initial = block.Find("initial_value")) window.initial_value = *initial;
  if (const Value* end = block.Find("end_value")) window.end_value = *end;
  window.lag = block.Number("lag");
  std::string order = TextIfSet(block, "row_order");
  if (order == "asc") window.row_order = IncrementalSpec::RowOrder::kAscending;
  if (order == "desc") window.row_order = IncrementalSpec::RowOrder::kDescending;
  std::string missing = block.String("on_cursor_value_missing");
  if (missing == "include")
    window.on_cursor_value_missing = IncrementalSpec::MissingCursor::kInclude;
  if (missing == "exclude")
    window.on_cursor_value_missing = IncrementalSpec::MissingCursor::kExclude;
  return window;
}

Result<std::vector<ResponseAction>> ResponseActionsOf(const Value* list) {
  static const FieldSpec kDeclaration = ResponseActionField();
  std::vector<ResponseAction> actions;
  if (list == nullptr || !list->is_list()) return actions;
  for (const Value& item : list->AsList()) {
    OptionReader options(kDeclaration, item);
    ResponseAction action;
    if (std::optional<int64_t> code = IntegerIfSet(options, "status_code")) {
      action.status_code = static_cast<int>(*code);
    }
    action.content = TextIfSet(options, "content");
    std::string kind = options.String("action");
    action.action = kind == "ignore"   ? ResponseAction::Kind::kIgnore
                    : kind == "retry"  ? ResponseAction::Kind::kRetry
                    : kind == "python" ? ResponseAction::Kind::kPython
                                       : ResponseAction::Kind::kFail;
    action.python = TextIfSet(options, "python");
    BIZON_RETURN_IF_ERROR(options.status());
    actions.push_back(std::move(action));
  }
  return actions;
}

namespace {

// The `endpoints` entry named `stream`, else an error naming the declared ones.
Result<Value> EndpointBlock(OptionReader& source, const std::string& stream) {
  const Value* endpoints = source.Find("endpoints");
  const Value* endpoint = endpoints != nullptr ? endpoints->Find(stream) : nullptr;
  if (endpoint != nullptr && endpoint->is_map()) return *endpoint;
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

}  // namespace

Result<EndpointEntry> EndpointOf(const Value& source, const std::string& stream) {
  static const FieldSpec kDeclaration = EndpointField();
  OptionReader source_options(RestApiDeclaration(), source);
  BIZON_ASSIGN_OR_RETURN(Value block, EndpointBlock(source_options, stream));
  OptionReader endpoint(kDeclaration, std::move(block));
  EndpointEntry entry;
  EndpointSpec& spec = entry.spec;
  spec.name = stream;
  spec.url = JoinUrl(source_options.String("base_url"), endpoint.String("path"));
  spec.method = endpoint.String("method");
  spec.params = ParamsOf(source_options.Find("params"));
  QueryParams own = ParamsOf(endpoint.Find("params"));
  spec.params.insert(spec.params.end(), own.begin(), own.end());
  for (const auto& [name, value] : ParamsOf(endpoint.Find("headers"))) {
    spec.headers.emplace_back(name, value);
  }
  if (const Value* body = endpoint.Find("body")) spec.body = *body;
  spec.record_selector = endpoint.String("record_selector");
  spec.record_id = endpoint.String("record_id");
  BIZON_ASSIGN_OR_RETURN(spec.pagination, PaginationOf(endpoint.Object("pagination")));
  if (spec.pagination.in_body && spec.method != "POST") {
    return Fail(InvalidArgumentError(
        fmt::format("endpoint '{}': pagination.location body needs method POST", stream)));
  }
  if (endpoint.Find("incremental") != nullptr) {
    OptionReader incremental = endpoint.Object("incremental");
    // source.cursor_field: a common option of every source (config/pipeline_spec.cc).
    spec.incremental = WindowOf(incremental, source.GetString("cursor_field"));
  }
  entry.total_path = TextIfSet(endpoint, "total_path");
  BIZON_RETURN_IF_ERROR(source_options.status());
  BIZON_RETURN_IF_ERROR(endpoint.status());
  return entry;
}

}  // namespace bizon
