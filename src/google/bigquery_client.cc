#include "google/bigquery_client.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>

#include "bizon/clock.h"
#include "google/google_endpoint.h"
#include "http/url.h"

namespace bizon {
namespace {

// int64 fields come as JSON strings ("123"); the emulator sometimes sends numbers.
std::optional<int64_t> ReadInt64(const Value* value) {
  if (value == nullptr || value->is_null()) return std::nullopt;
  if (value->is_integer()) return value->AsInteger();
  if (!value->is_string()) return std::nullopt;
  const std::string& text = value->AsString();
  int64_t out = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return out;
}

// Google's error object: {"error": {"code", "message", "errors": [{"reason", "message"}],
// "status"}}. The first reason, or "".
std::string ErrorReason(const Value& body) {
  const Value* errors = body.FindPath("error.errors");
  if (errors == nullptr || !errors->is_list() || errors->AsList().empty()) return "";
  return errors->AsList().front().GetString("reason");
}

std::string BodyErrorReason(std::string_view body) {
  auto parsed = Value::FromJson(body);
  if (!parsed || !parsed->is_map()) return "";
  return ErrorReason(*parsed);
}

bool IsRetryableReason(std::string_view reason) {
  return reason == "rateLimitExceeded" || reason == "backendError";
}

Status ResponseError(std::string_view method, std::string_view url, const HttpResponse& response) {
  StatusCode code = StatusCode::kFailedPrecondition;
  if (response.status == 404) code = StatusCode::kNotFound;
  if (response.status == 409) code = StatusCode::kAborted;
  if (response.status == 429 || response.status >= 500) code = StatusCode::kUnavailable;
  auto parsed = Value::FromJson(response.body);
  std::string detail;
  if (parsed && parsed->is_map() && parsed->FindPath("error.message") != nullptr) {
    std::string reason = ErrorReason(*parsed);
    if (IsRetryableReason(reason)) code = StatusCode::kUnavailable;
    detail = fmt::format("{}{}", reason.empty() ? "" : reason + ": ",
                         parsed->FindPath("error.message")->ToDisplayString());
  } else {
    detail = BodyExcerpt(response.body);
  }
  return Status(code, fmt::format("BigQuery {} {} answered {}{}{}", method, url, response.status,
                                  detail.empty() ? "" : ": ", detail));
}

Result<Value> ParseObject(std::string_view body, std::string_view what) {
  auto parsed = Value::FromJson(body);
  if (!parsed || !parsed->is_map()) {
    return Fail(DataLossError(fmt::format("BigQuery answered {} that is not a JSON object: {}",
                                          what, BodyExcerpt(body))));
  }
  return std::move(*parsed);
}

Value StringList(const std::vector<std::string>& items) {
  Value::List list;
  for (const std::string& item : items) list.emplace_back(item);
  return Value(std::move(list));
}

Value DatasetRef(std::string_view project, std::string_view dataset) {
  return Value(Value::Map{{"projectId", Value(project)}, {"datasetId", Value(dataset)}});
}

// A cell as the API sends it ({"v": ...}), read with its field's schema.
Value ReadCell(const Value& cell, const BigQueryField& field, bool element);

Value ReadRecord(const Value& record, const BigQuerySchema& fields) {
  const Value* cells = record.Find("f");
  if (cells == nullptr || !cells->is_list()) return Value();
  Value::Map out;
  const Value::List& list = cells->AsList();
  for (size_t i = 0; i < list.size() && i < fields.size(); ++i) {
    out.emplace_back(fields[i].name, ReadCell(list[i], fields[i], false));
  }
  return Value(std::move(out));
}

Value ReadCell(const Value& cell, const BigQueryField& field, bool element) {
  const Value* v = cell.Find("v");
  if (v == nullptr || v->is_null()) return Value();
  if (field.mode == "REPEATED" && !element && v->is_list()) {
    Value::List items;
    for (const Value& item : v->AsList()) items.push_back(ReadCell(item, field, true));
    return Value(std::move(items));
  }
  if ((field.type == "RECORD" || field.type == "STRUCT") && v->is_map()) {
    return ReadRecord(*v, field.fields);
  }
  if (v->is_string()) return *v;
  return Value(v->ToDisplayString());
}

std::vector<BigQueryRow> ReadRows(const Value* rows, const BigQuerySchema& schema) {
  std::vector<BigQueryRow> out;
  if (rows == nullptr || !rows->is_list()) return out;
  out.reserve(rows->AsList().size());
  for (const Value& row : rows->AsList()) {
    BigQueryRow cells;
    const Value* f = row.Find("f");
    if (f != nullptr && f->is_list()) {
      const Value::List& list = f->AsList();
      for (size_t i = 0; i < list.size(); ++i) {
        static const BigQueryField kUntyped{.type = "STRING"};
        cells.push_back(ReadCell(list[i], i < schema.size() ? schema[i] : kUntyped, false));
      }
    }
    out.push_back(std::move(cells));
  }
  return out;
}

// "reason: message" of each entry of an `errors` array.
std::vector<std::string> ErrorList(const Value* errors) {
  std::vector<std::string> out;
  if (errors == nullptr || !errors->is_list()) return out;
  for (const Value& error : errors->AsList()) {
    std::string reason = error.GetString("reason");
    out.push_back(
        fmt::format("{}{}", reason.empty() ? "" : reason + ": ", error.GetString("message")));
  }
  return out;
}

Result<BigQueryQueryResult> ReadQueryResponse(const Value& body, const BigQueryJobRef& fallback) {
  BigQueryQueryResult result;
  const Value* ref = body.Find("jobReference");
  result.job = fallback;
  if (ref != nullptr && ref->is_map()) {
    if (!ref->GetString("projectId").empty()) result.job.project = ref->GetString("projectId");
    if (!ref->GetString("jobId").empty()) result.job.job_id = ref->GetString("jobId");
    if (!ref->GetString("location").empty()) result.job.location = ref->GetString("location");
  }
  BIZON_ASSIGN_OR_RETURN(result.schema, BigQuerySchemaFromJson(body.Find("schema")));
  result.rows = ReadRows(body.Find("rows"), result.schema);
  result.total_rows = ReadInt64(body.Find("totalRows"));
  result.num_dml_affected_rows = ReadInt64(body.Find("numDmlAffectedRows"));
  result.page_token = body.GetString("pageToken");
  result.job_complete = body.GetBool("jobComplete", false);
  return result;
}

constexpr std::string_view kFormatInt64Timestamps = "formatOptions.useInt64Timestamp";

}  // namespace

// ---- Resources ----------------------------------------------------------------------------

Value BigQueryField::ToJson() const {
  Value::Map out{{"name", Value(name)}, {"type", Value(type)}};
  if (!mode.empty()) out.emplace_back("mode", Value(mode));
  if (!description.empty()) out.emplace_back("description", Value(description));
  if (!default_value_expression.empty()) {
    out.emplace_back("defaultValueExpression", Value(default_value_expression));
  }
  if (!fields.empty()) {
    Value::List sub;
    for (const BigQueryField& field : fields) sub.push_back(field.ToJson());
    out.emplace_back("fields", Value(std::move(sub)));
  }
  return Value(std::move(out));
}

Result<BigQueryField> BigQueryField::FromJson(const Value& json) {
  if (!json.is_map() || json.GetString("name").empty()) {
    return Fail(DataLossError(
        fmt::format("BigQuery answered a schema field without a name: {}", json.ToJson())));
  }
  BigQueryField field{.name = json.GetString("name"),
                      .type = json.GetString("type"),
                      .mode = json.GetString("mode"),
                      .description = json.GetString("description"),
                      .default_value_expression = json.GetString("defaultValueExpression")};
  if (const Value* sub = json.Find("fields"); sub != nullptr && sub->is_list()) {
    for (const Value& item : sub->AsList()) {
      BIZON_ASSIGN_OR_RETURN(BigQueryField child, BigQueryField::FromJson(item));
      field.fields.push_back(std::move(child));
    }
  }
  return field;
}

Value BigQuerySchemaToJson(const BigQuerySchema& schema) {
  Value::List fields;
  for (const BigQueryField& field : schema) fields.push_back(field.ToJson());
  return Value(Value::Map{{"fields", Value(std::move(fields))}});
}

Result<BigQuerySchema> BigQuerySchemaFromJson(const Value* schema) {
  BigQuerySchema out;
  if (schema == nullptr || !schema->is_map()) return out;
  const Value* fields = schema->Find("fields");
  if (fields == nullptr || !fields->is_list()) return out;
  for (const Value& item : fields->AsList()) {
    BIZON_ASSIGN_OR_RETURN(BigQueryField field, BigQueryField::FromJson(item));
    out.push_back(std::move(field));
  }
  return out;
}

Value BigQueryTimePartitioning::ToJson() const {
  Value::Map out{{"type", Value(type)}};
  if (!field.empty()) out.emplace_back("field", Value(field));
  if (expiration_ms) out.emplace_back("expirationMs", Value(std::to_string(*expiration_ms)));
  return Value(std::move(out));
}

std::string BigQueryTableRef::ToString() const {
  return fmt::format("{}.{}.{}", project, dataset, table);
}

Value BigQueryTableRef::ToJson() const {
  return Value(Value::Map{
      {"projectId", Value(project)}, {"datasetId", Value(dataset)}, {"tableId", Value(table)}});
}

Value BigQueryTable::ToJson() const {
  Value::Map out{{"tableReference", ref.ToJson()}};
  if (!schema.empty()) out.emplace_back("schema", BigQuerySchemaToJson(schema));
  if (time_partitioning) out.emplace_back("timePartitioning", time_partitioning->ToJson());
  if (!clustering_fields.empty()) {
    out.emplace_back("clustering", Value(Value::Map{{"fields", StringList(clustering_fields)}}));
  }
  if (!description.empty()) out.emplace_back("description", Value(description));
  if (expiration_time_ms) {
    out.emplace_back("expirationTime", Value(std::to_string(*expiration_time_ms)));
  }
  if (!primary_key.empty()) {
    out.emplace_back(
        "tableConstraints",
        Value(Value::Map{{"primaryKey", Value(Value::Map{{"columns", StringList(primary_key)}})}}));
  }
  if (!max_staleness.empty()) out.emplace_back("maxStaleness", Value(max_staleness));
  return Value(std::move(out));
}

Result<BigQueryTable> BigQueryTable::FromJson(const Value& json) {
  BigQueryTable table;
  if (const Value* ref = json.Find("tableReference"); ref != nullptr && ref->is_map()) {
    table.ref = {.project = ref->GetString("projectId"),
                 .dataset = ref->GetString("datasetId"),
                 .table = ref->GetString("tableId")};
  }
  if (table.ref.table.empty()) {
    return Fail(DataLossError(fmt::format("BigQuery answered a table without a tableReference: {}",
                                          BodyExcerpt(json.ToJson()))));
  }
  BIZON_ASSIGN_OR_RETURN(table.schema, BigQuerySchemaFromJson(json.Find("schema")));
  if (const Value* partitioning = json.Find("timePartitioning");
      partitioning != nullptr && partitioning->is_map()) {
    table.time_partitioning =
        BigQueryTimePartitioning{.type = partitioning->GetString("type", "DAY"),
                                 .field = partitioning->GetString("field"),
                                 .expiration_ms = ReadInt64(partitioning->Find("expirationMs"))};
  }
  if (const Value* fields = json.FindPath("clustering.fields");
      fields != nullptr && fields->is_list()) {
    for (const Value& field : fields->AsList()) {
      if (field.is_string()) table.clustering_fields.push_back(field.AsString());
    }
  }
  table.description = json.GetString("description");
  table.expiration_time_ms = ReadInt64(json.Find("expirationTime"));
  if (const Value* columns = json.FindPath("tableConstraints.primaryKey.columns");
      columns != nullptr && columns->is_list()) {
    for (const Value& column : columns->AsList()) {
      if (column.is_string()) table.primary_key.push_back(column.AsString());
    }
  }
  table.max_staleness = json.GetString("maxStaleness");
  table.type = json.GetString("type");
  table.num_rows = ReadInt64(json.Find("numRows"));
  return table;
}

BigQueryParameter BigQueryParameter::String(std::string name, std::optional<std::string> value) {
  return {.name = std::move(name), .type = "STRING", .value = std::move(value)};
}

BigQueryParameter BigQueryParameter::Int64(std::string name, std::optional<int64_t> value) {
  BigQueryParameter out{.name = std::move(name), .type = "INT64"};
  if (value) out.value = std::to_string(*value);
  return out;
}

BigQueryParameter BigQueryParameter::Bool(std::string name, std::optional<bool> value) {
  BigQueryParameter out{.name = std::move(name), .type = "BOOL"};
  if (value) out.value = *value ? "true" : "false";
  return out;
}

BigQueryParameter BigQueryParameter::Timestamp(std::string name, std::optional<int64_t> epoch_us) {
  BigQueryParameter out{.name = std::move(name), .type = "TIMESTAMP"};
  if (epoch_us) out.value = FormatSqlTimestamp(*epoch_us) + "+00:00";
  return out;
}

Value BigQueryParameter::ToJson() const {
  // A NULL is a parameterValue without a value, as Google's clients send it.
  Value::Map parameter_value;
  if (value) parameter_value.emplace_back("value", Value(*value));
  return Value(Value::Map{{"name", Value(name)},
                          {"parameterType", Value(Value::Map{{"type", Value(type)}})},
                          {"parameterValue", Value(std::move(parameter_value))}});
}

std::string BigQueryJobRef::ToString() const {
  return location.empty() ? fmt::format("{}:{}", project, job_id)
                          : fmt::format("{}:{}.{}", project, location, job_id);
}

Status BigQueryJobError(const BigQueryJobRef& ref, const Value& error_result,
                        const std::vector<std::string>& errors) {
  std::string reason = error_result.GetString("reason");
  std::string message = error_result.GetString("message");
  std::string location = error_result.GetString("location");
  StatusCode code = IsRetryableReason(reason) || reason == "internalError"
                        ? StatusCode::kUnavailable
                        : StatusCode::kFailedPrecondition;
  std::string text = fmt::format("BigQuery job {} failed: {}{}{}", ref.ToString(),
                                 reason.empty() ? "" : reason + ": ", message,
                                 location.empty() ? "" : " (at " + location + ")");
  // Further errors (row errors of a load) add detail; the first repeats errorResult.
  std::string head = fmt::format("{}{}", reason.empty() ? "" : reason + ": ", message);
  int extra = 0;
  for (const std::string& error : errors) {
    if (error == head) continue;
    if (++extra > 5) {
      text += fmt::format("; and {} more", errors.size() - 6);
      break;
    }
    text += "; " + error;
  }
  return Status(code, std::move(text));
}

Result<BigQueryJob> BigQueryJob::FromJson(const Value& json) {
  BigQueryJob job;
  if (const Value* ref = json.Find("jobReference"); ref != nullptr && ref->is_map()) {
    job.ref = {.project = ref->GetString("projectId"),
               .job_id = ref->GetString("jobId"),
               .location = ref->GetString("location")};
  }
  if (job.ref.job_id.empty()) {
    return Fail(DataLossError(fmt::format("BigQuery answered a job without a jobReference: {}",
                                          BodyExcerpt(json.ToJson()))));
  }
  job.state = json.FindPath("status.state") != nullptr
                  ? json.FindPath("status.state")->ToDisplayString()
                  : "";
  job.errors = ErrorList(json.FindPath("status.errors"));
  if (const Value* error = json.FindPath("status.errorResult");
      error != nullptr && error->is_map()) {
    job.error = BigQueryJobError(job.ref, *error, job.errors);
  }
  if (const Value* query = json.FindPath("statistics.query"); query != nullptr) {
    job.statement_type = query->GetString("statementType");
    job.num_dml_affected_rows = ReadInt64(query->Find("numDmlAffectedRows"));
  }
  job.output_rows = ReadInt64(json.FindPath("statistics.load.outputRows"));
  job.resource = json;
  return job;
}

Value BigQueryLoadConfig::ToJson() const {
  Value::Map load;
  // A load sent through the media upload endpoint names no files.
  if (!source_uris.empty()) load.emplace_back("sourceUris", StringList(source_uris));
  load.insert(load.end(), {{"sourceFormat", Value(source_format)},
                           {"destinationTable", destination.ToJson()},
                           {"writeDisposition", Value(write_disposition)},
                           {"createDisposition", Value(create_disposition)}});
  if (!schema.empty()) load.emplace_back("schema", BigQuerySchemaToJson(schema));
  if (!schema_update_options.empty()) {
    load.emplace_back("schemaUpdateOptions", StringList(schema_update_options));
  }
  if (time_partitioning) load.emplace_back("timePartitioning", time_partitioning->ToJson());
  if (!clustering_fields.empty()) {
    load.emplace_back("clustering", Value(Value::Map{{"fields", StringList(clustering_fields)}}));
  }
  if (source_format == "AVRO")
    load.emplace_back("useAvroLogicalTypes", Value(use_avro_logical_types));
  if (ignore_unknown_values) load.emplace_back("ignoreUnknownValues", Value(true));
  if (max_bad_records > 0) load.emplace_back("maxBadRecords", Value(max_bad_records));
  return Value(Value::Map{{"load", Value(std::move(load))}});
}

Value BigQueryCopyConfig::ToJson() const {
  Value::List tables;
  for (const BigQueryTableRef& source : sources) tables.push_back(source.ToJson());
  Value::Map copy{{"sourceTables", Value(std::move(tables))},
                  {"destinationTable", destination.ToJson()},
                  {"writeDisposition", Value(write_disposition)},
                  {"createDisposition", Value(create_disposition)}};
  return Value(Value::Map{{"copy", Value(std::move(copy))}});
}

namespace {

// The parts of a query that jobs.insert's `configuration.query` and jobs.query's QueryRequest
// share.
void AppendQueryParts(const BigQueryQueryConfig& config, Value::Map& out) {
  out.emplace_back("query", Value(config.query));
  out.emplace_back("useLegacySql", Value(false));
  if (!config.parameters.empty()) {
    out.emplace_back("parameterMode", Value("NAMED"));
    Value::List parameters;
    for (const BigQueryParameter& parameter : config.parameters) {
      parameters.push_back(parameter.ToJson());
    }
    out.emplace_back("queryParameters", Value(std::move(parameters)));
  }
  if (config.default_dataset) {
    out.emplace_back("defaultDataset",
                     DatasetRef(config.default_dataset->project, config.default_dataset->dataset));
  }
}

}  // namespace

Value BigQueryQueryConfig::ToJson() const {
  Value::Map query_config;
  AppendQueryParts(*this, query_config);
  if (destination) query_config.emplace_back("destinationTable", destination->ToJson());
  if (!write_disposition.empty()) {
    query_config.emplace_back("writeDisposition", Value(write_disposition));
  }
  if (!create_disposition.empty()) {
    query_config.emplace_back("createDisposition", Value(create_disposition));
  }
  return Value(Value::Map{{"query", Value(std::move(query_config))}});
}

std::optional<size_t> BigQueryQueryResult::ColumnIndex(std::string_view column) const {
  for (size_t i = 0; i < schema.size(); ++i) {
    if (schema[i].name == column) return i;
  }
  return std::nullopt;
}

const Value& BigQueryQueryResult::Cell(size_t row, std::string_view column) const {
  static const Value kNull;
  std::optional<size_t> index = ColumnIndex(column);
  if (!index || row >= rows.size() || *index >= rows[row].size()) return kNull;
  return rows[row][*index];
}

// ---- Client -------------------------------------------------------------------------------

std::optional<std::string> BigQueryEmulatorEndpoint(const GoogleEnvFunction& env) {
  return GoogleEmulatorEndpoint(env, "BIGQUERY_EMULATOR_HOST");
}

Result<std::unique_ptr<BigQueryClient>> BigQueryClient::Make(BigQueryClientOptions options) {
  BIZON_ASSIGN_OR_RETURN(GoogleApiEndpoint endpoint,
                         ResolveGoogleApiEndpoint({.api = "BigQuery",
                                                   .endpoint = options.endpoint,
                                                   .emulator_variable = "BIGQUERY_EMULATOR_HOST",
                                                   .production = kBigQueryProductionEndpoint,
                                                   .credentials = options.credentials,
                                                   .scope = std::string(kBigQueryScope),
                                                   .sleep = options.sleep,
                                                   .env = options.env}));
  options.credentials = std::move(endpoint.credentials);
  std::string project = options.project;
  if (project.empty()) project = options.credentials->project_id().value_or("");
  spdlog::info("BigQuery client: {}{}{}", endpoint.url,
               endpoint.emulator ? " (BIGQUERY_EMULATOR_HOST, no credentials)"
                                 : ", " + options.credentials->Describe(),
               project.empty() ? "" : ", project " + project);
  return std::unique_ptr<BigQueryClient>(
      new BigQueryClient(std::move(options), endpoint.url, endpoint.emulator, std::move(project)));
}

BigQueryClient::BigQueryClient(BigQueryClientOptions options, std::string endpoint, bool emulator,
                               std::string project)
    : options_(std::move(options)),
      endpoint_(std::move(endpoint)),
      emulator_(emulator),
      project_(std::move(project)) {
  session_ = std::make_unique<HttpSession>(GoogleApiSessionOptions(
      options_.credentials, options_.timeouts, options_.retries, options_.sleep));
}

Result<HttpResponse> BigQueryClient::Send(HttpRequest request) {
  bool typed = std::any_of(request.headers.begin(), request.headers.end(),
                           [](const auto& header) { return header.first == "Content-Type"; });
  if (!request.body.empty() && !typed) {
    request.headers.emplace_back("Content-Type", "application/json");
  }
  // The session retries 429, 5xx and connection failures. BigQuery also throttles with 403 (and
  // sometimes 400) carrying reason rateLimitExceeded or backendError: those are retried here,
  // on the same budget and backoff.
  const RetryPolicy& retry = options_.retries;
  for (int attempt = 0;; ++attempt) {
    auto response = session_->Send(request);
    if (!response) return Fail(Status(response.error().code(), response.error().message()));
    bool throttled = (response->status == 403 || response->status == 400) &&
                     IsRetryableReason(BodyErrorReason(response->body));
    if (!throttled || attempt >= retry.total || !retry.IsMethodRetryable(request.method)) {
      return response;
    }
    double wait = retry.BackoffSeconds(attempt + 1);
    spdlog::warn("BigQuery {} {} answered {} {}; retrying in {:.1f} s ({} of {})", request.method,
                 request.url, response->status, BodyErrorReason(response->body), wait, attempt + 1,
                 retry.total);
    options_.sleep(wait);
  }
}

std::string BigQueryClient::ProjectUrl(std::string_view project) const {
  return fmt::format("{}/bigquery/v2/projects/{}", endpoint_,
                     PercentEncode(project.empty() ? std::string_view(project_) : project));
}

BigQueryJobRef BigQueryClient::Complete(const BigQueryJobRef& ref) const {
  BigQueryJobRef out = ref;
  if (out.project.empty()) out.project = project_;
  if (out.location.empty()) out.location = options_.location;
  return out;
}

// ---- Datasets -----------------------------------------------------------------------------

namespace {

BigQueryDataset ReadDataset(const Value& json) {
  return {.project = json.FindPath("datasetReference.projectId") != nullptr
                         ? json.FindPath("datasetReference.projectId")->ToDisplayString()
                         : "",
          .dataset = json.FindPath("datasetReference.datasetId") != nullptr
                         ? json.FindPath("datasetReference.datasetId")->ToDisplayString()
                         : "",
          .location = json.GetString("location"),
          .description = json.GetString("description")};
}

}  // namespace

Result<BigQueryDataset> BigQueryClient::GetDataset(std::string_view project,
                                                   std::string_view dataset) {
  std::string url = fmt::format("{}/datasets/{}", ProjectUrl(project), PercentEncode(dataset));
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, Send({.url = url}));
  if (!response.ok()) return Fail(ResponseError("GET", url, response));
  BIZON_ASSIGN_OR_RETURN(Value json, ParseObject(response.body, "a dataset"));
  return ReadDataset(json);
}

Result<BigQueryDataset> BigQueryClient::InsertDataset(const BigQueryDataset& dataset,
                                                      bool exists_ok) {
  std::string project = dataset.project.empty() ? project_ : dataset.project;
  std::string url = fmt::format("{}/datasets", ProjectUrl(project));
  Value::Map resource{{"datasetReference", DatasetRef(project, dataset.dataset)}};
  if (!dataset.location.empty()) resource.emplace_back("location", Value(dataset.location));
  if (!dataset.description.empty()) {
    resource.emplace_back("description", Value(dataset.description));
  }
  BIZON_ASSIGN_OR_RETURN(
      HttpResponse response,
      Send({.method = "POST", .url = url, .body = Value(std::move(resource)).ToJson()}));
  if (response.status == 409 && exists_ok) return GetDataset(project, dataset.dataset);
  if (!response.ok()) return Fail(ResponseError("POST", url, response));
  BIZON_ASSIGN_OR_RETURN(Value json, ParseObject(response.body, "a dataset"));
  return ReadDataset(json);
}

Status BigQueryClient::DeleteDataset(std::string_view project, std::string_view dataset,
                                     bool delete_contents, bool missing_ok) {
  std::string url = fmt::format("{}/datasets/{}", ProjectUrl(project), PercentEncode(dataset));
  QueryParams query;
  if (delete_contents) query.emplace_back("deleteContents", "true");
  BIZON_ASSIGN_OR_RETURN(HttpResponse response,
                         Send({.method = "DELETE", .url = url, .query = query}));
  if (response.ok() || (missing_ok && response.status == 404)) return Status::Ok();
  return ResponseError("DELETE", url, response);
}

// ---- Tables -------------------------------------------------------------------------------

namespace {

std::string TableUrl(const std::string& project_url, const BigQueryTableRef& ref) {
  return fmt::format("{}/datasets/{}/tables/{}", project_url, PercentEncode(ref.dataset),
                     PercentEncode(ref.table));
}

}  // namespace

Result<BigQueryTable> BigQueryClient::GetTable(const BigQueryTableRef& ref) {
  std::string url = TableUrl(ProjectUrl(ref.project), ref);
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, Send({.url = url}));
  if (!response.ok()) return Fail(ResponseError("GET", url, response));
  BIZON_ASSIGN_OR_RETURN(Value json, ParseObject(response.body, "a table"));
  return BigQueryTable::FromJson(json);
}

Result<BigQueryTable> BigQueryClient::InsertTable(const BigQueryTable& table, bool exists_ok) {
  BigQueryTable complete = table;
  if (complete.ref.project.empty()) complete.ref.project = project_;
  std::string url = fmt::format("{}/datasets/{}/tables", ProjectUrl(complete.ref.project),
                                PercentEncode(complete.ref.dataset));
  BIZON_ASSIGN_OR_RETURN(HttpResponse response,
                         Send({.method = "POST", .url = url, .body = complete.ToJson().ToJson()}));
  if (response.status == 409 && exists_ok) return GetTable(complete.ref);
  if (!response.ok()) return Fail(ResponseError("POST", url, response));
  BIZON_ASSIGN_OR_RETURN(Value json, ParseObject(response.body, "a table"));
  return BigQueryTable::FromJson(json);
}

Result<BigQueryTable> BigQueryClient::PatchTable(const BigQueryTable& table) {
  BigQueryTableRef ref = table.ref;
  if (ref.project.empty()) ref.project = project_;
  std::string url = TableUrl(ProjectUrl(ref.project), ref);
  Value::Map patch;
  if (!table.schema.empty()) patch.emplace_back("schema", BigQuerySchemaToJson(table.schema));
  if (table.time_partitioning) {
    patch.emplace_back("timePartitioning", table.time_partitioning->ToJson());
  }
  if (!table.clustering_fields.empty()) {
    patch.emplace_back("clustering",
                       Value(Value::Map{{"fields", StringList(table.clustering_fields)}}));
  }
  if (!table.description.empty()) patch.emplace_back("description", Value(table.description));
  BIZON_ASSIGN_OR_RETURN(
      HttpResponse response,
      Send({.method = "PATCH", .url = url, .body = Value(std::move(patch)).ToJson()}));
  if (!response.ok()) return Fail(ResponseError("PATCH", url, response));
  BIZON_ASSIGN_OR_RETURN(Value json, ParseObject(response.body, "a table"));
  return BigQueryTable::FromJson(json);
}

Status BigQueryClient::DeleteTable(const BigQueryTableRef& ref, bool missing_ok) {
  std::string url = TableUrl(ProjectUrl(ref.project), ref);
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, Send({.method = "DELETE", .url = url}));
  if (response.ok() || (missing_ok && response.status == 404)) return Status::Ok();
  return ResponseError("DELETE", url, response);
}

// ---- Jobs ---------------------------------------------------------------------------------

Result<BigQueryJob> BigQueryClient::InsertJob(const BigQueryJobRef& ref, const Value& configuration,
                                              std::string_view media) {
  BigQueryJobRef complete = Complete(ref);
  if (!IsValidJobId(complete.job_id)) {
    return Fail(InvalidArgumentError(
        fmt::format("BigQuery job ids are letters, digits, '_' and '-' (at most 1024): '{}'",
                    complete.job_id)));
  }
  if (complete.project.empty()) {
    return Fail(InvalidArgumentError(
        "BigQuery needs a project to run a job in: none was given and the credentials name none"));
  }
  Value::Map job_ref{{"projectId", Value(complete.project)}, {"jobId", Value(complete.job_id)}};
  if (!complete.location.empty()) job_ref.emplace_back("location", Value(complete.location));
  Value body(
      Value::Map{{"jobReference", Value(std::move(job_ref))}, {"configuration", configuration}});
  std::string url = fmt::format("{}/jobs", ProjectUrl(complete.project));
  HttpRequest request{.method = "POST", .url = url, .body = body.ToJson()};
  if (!media.empty()) {
    // The media upload endpoint: the job resource and its data in one multipart request.
    url = fmt::format("{}/upload/bigquery/v2/projects/{}/jobs", endpoint_,
                      PercentEncode(complete.project));
    GoogleMultipartBody multipart =
        MakeGoogleMultipartBody(request.body, media, "application/octet-stream");
    request = {.method = "POST",
               .url = url,
               .query = {{"uploadType", "multipart"}},
               .headers = {{"Content-Type", std::move(multipart.content_type)}},
               .body = std::move(multipart.body)};
  }
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, Send(std::move(request)));
  if (response.status == 409) {
    // Our job id is taken: the job was submitted before (a lost answer, a resumed run). Use it.
    spdlog::info("BigQuery job {} already exists; waiting for it instead of submitting it again",
                 complete.ToString());
    auto existing = GetJob(complete);
    if (!existing) {
      return Fail(existing.error().WithContext(
          fmt::format("BigQuery answered 409 to job {} but cannot read it", complete.ToString())));
    }
    existing->already_existed = true;
    return existing;
  }
  if (!response.ok()) return Fail(ResponseError("POST", url, response));
  BIZON_ASSIGN_OR_RETURN(Value json, ParseObject(response.body, "a job"));
  return BigQueryJob::FromJson(json);
}

Result<BigQueryJob> BigQueryClient::GetJob(const BigQueryJobRef& ref) {
  BigQueryJobRef complete = Complete(ref);
  std::string url =
      fmt::format("{}/jobs/{}", ProjectUrl(complete.project), PercentEncode(complete.job_id));
  QueryParams query;
  if (!complete.location.empty()) query.emplace_back("location", complete.location);
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, Send({.url = url, .query = query}));
  if (!response.ok()) return Fail(ResponseError("GET", AppendQuery(url, query), response));
  BIZON_ASSIGN_OR_RETURN(Value json, ParseObject(response.body, "a job"));
  return BigQueryJob::FromJson(json);
}

Result<BigQueryJob> BigQueryClient::WaitForJob(BigQueryJob job) {
  double waited = 0;
  double wait = options_.poll_initial_s;
  while (!job.done()) {
    if (waited >= options_.job_timeout_s) {
      return Fail(UnavailableError(
          fmt::format("BigQuery job {} is still {} after {:.0f} s; it may finish later",
                      job.ref.ToString(), job.state, waited)));
    }
    options_.sleep(wait);
    waited += wait;
    wait = std::min(wait * 2, options_.poll_max_s);
    BIZON_ASSIGN_OR_RETURN(BigQueryJob polled, GetJob(job.ref));
    polled.already_existed = job.already_existed;
    job = std::move(polled);
  }
  if (job.error) return Fail(*job.error);
  return job;
}

Result<BigQueryJob> BigQueryClient::RunJob(const BigQueryJobRef& ref, const Value& configuration) {
  BIZON_ASSIGN_OR_RETURN(BigQueryJob job, InsertJob(ref, configuration));
  return WaitForJob(std::move(job));
}

Result<BigQueryJob> BigQueryClient::RunLoad(const BigQueryJobRef& ref,
                                            const BigQueryLoadConfig& load) {
  BigQueryLoadConfig complete = load;
  if (complete.destination.project.empty()) complete.destination.project = project_;
  return RunJob(ref, complete.ToJson());
}

Result<BigQueryJob> BigQueryClient::RunCopy(const BigQueryJobRef& ref,
                                            const BigQueryCopyConfig& copy) {
  BigQueryCopyConfig complete = copy;
  if (complete.destination.project.empty()) complete.destination.project = project_;
  for (BigQueryTableRef& source : complete.sources) {
    if (source.project.empty()) source.project = project_;
  }
  return RunJob(ref, complete.ToJson());
}

Result<BigQueryQueryResult> BigQueryClient::RunQuery(const BigQueryJobRef& ref,
                                                     const BigQueryQueryConfig& query,
                                                     bool all_pages) {
  BIZON_ASSIGN_OR_RETURN(BigQueryJob job, RunJob(ref, query.ToJson()));
  BIZON_ASSIGN_OR_RETURN(BigQueryQueryResult result,
                         GetQueryResults(job.ref, "", query.max_results));
  // DML counts come from the job's statistics (getQueryResults has them on BigQuery, not always
  // on the emulator).
  if (!result.num_dml_affected_rows) result.num_dml_affected_rows = job.num_dml_affected_rows;
  if (!all_pages) return result;
  return FetchAllPages(std::move(result), query.max_results);
}

Result<BigQueryQueryResult> BigQueryClient::FetchAllPages(BigQueryQueryResult first,
                                                          int64_t max_results) {
  while (!first.page_token.empty()) {
    BIZON_ASSIGN_OR_RETURN(BigQueryQueryResult page,
                           GetQueryResults(first.job, first.page_token, max_results));
    if (page.page_token == first.page_token) {
      return Fail(DataLossError(fmt::format("BigQuery answered the same pageToken twice for job {}",
                                            first.job.ToString())));
    }
    std::move(page.rows.begin(), page.rows.end(), std::back_inserter(first.rows));
    first.page_token = std::move(page.page_token);
  }
  return first;
}

Result<BigQueryQueryResult> BigQueryClient::Query(const BigQueryQueryConfig& query,
                                                  bool all_pages) {
  if (query.destination) {
    return Fail(InvalidArgumentError(
        "a query with a destination table runs as a job (RunQuery), not through jobs.query"));
  }
  if (project_.empty()) {
    return Fail(InvalidArgumentError(
        "BigQuery needs a project to run a query in: none was given and the credentials name "
        "none"));
  }
  Value::Map request;
  AppendQueryParts(query, request);
  if (!options_.location.empty()) request.emplace_back("location", Value(options_.location));
  request.emplace_back("timeoutMs", Value(query.timeout_ms));
  if (query.max_results > 0) request.emplace_back("maxResults", Value(query.max_results));
  request.emplace_back("formatOptions", Value(Value::Map{{"useInt64Timestamp", Value(true)}}));
  std::string url = fmt::format("{}/queries", ProjectUrl(project_));
  BIZON_ASSIGN_OR_RETURN(
      HttpResponse response,
      Send({.method = "POST", .url = url, .body = Value(std::move(request)).ToJson()}));
  if (!response.ok()) return Fail(ResponseError("POST", url, response));
  BIZON_ASSIGN_OR_RETURN(Value json, ParseObject(response.body, "a query response"));
  // The emulator answers a failed query with 200 and a top-level `errors` array.
  if (std::vector<std::string> errors = ErrorList(json.Find("errors")); !errors.empty()) {
    return Fail(
        FailedPreconditionError(fmt::format("BigQuery query failed: {}", fmt::join(errors, "; "))));
  }
  BIZON_ASSIGN_OR_RETURN(BigQueryQueryResult result,
                         ReadQueryResponse(json, {.project = project_}));
  if (!result.job_complete) {
    // Wait for the job, then read its first page again.
    BIZON_ASSIGN_OR_RETURN(BigQueryJob job, GetJob(result.job));
    BIZON_ASSIGN_OR_RETURN(job, WaitForJob(std::move(job)));
    BIZON_ASSIGN_OR_RETURN(result, GetQueryResults(result.job, "", query.max_results));
  }
  if (!all_pages) return result;
  return FetchAllPages(std::move(result), query.max_results);
}

Result<BigQueryQueryResult> BigQueryClient::GetQueryResults(const BigQueryJobRef& ref,
                                                            std::string_view page_token,
                                                            int64_t max_results) {
  BigQueryJobRef complete = Complete(ref);
  std::string url =
      fmt::format("{}/queries/{}", ProjectUrl(complete.project), PercentEncode(complete.job_id));
  QueryParams query{{std::string(kFormatInt64Timestamps), "true"}};
  if (!complete.location.empty()) query.emplace_back("location", complete.location);
  if (!page_token.empty()) query.emplace_back("pageToken", std::string(page_token));
  if (max_results > 0) query.emplace_back("maxResults", std::to_string(max_results));
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, Send({.url = url, .query = query}));
  if (!response.ok()) return Fail(ResponseError("GET", AppendQuery(url, query), response));
  BIZON_ASSIGN_OR_RETURN(Value json, ParseObject(response.body, "query results"));
  if (std::vector<std::string> errors = ErrorList(json.Find("errors")); !errors.empty()) {
    return Fail(FailedPreconditionError(
        fmt::format("BigQuery query {} failed: {}", complete.ToString(), fmt::join(errors, "; "))));
  }
  return ReadQueryResponse(json, complete);
}

Result<BigQueryRows> BigQueryClient::ListTableData(const BigQueryTableRef& ref,
                                                   std::string_view page_token,
                                                   int64_t max_results) {
  BigQueryTableRef complete = ref;
  if (complete.project.empty()) complete.project = project_;
  // The schema gives the cells their shape (records, repeated fields).
  BIZON_ASSIGN_OR_RETURN(BigQueryTable table, GetTable(complete));
  std::string url = TableUrl(ProjectUrl(complete.project), complete) + "/data";
  QueryParams query{{std::string(kFormatInt64Timestamps), "true"}};
  if (!page_token.empty()) query.emplace_back("pageToken", std::string(page_token));
  if (max_results > 0) query.emplace_back("maxResults", std::to_string(max_results));
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, Send({.url = url, .query = query}));
  if (!response.ok()) return Fail(ResponseError("GET", AppendQuery(url, query), response));
  BIZON_ASSIGN_OR_RETURN(Value json, ParseObject(response.body, "table data"));
  return BigQueryRows{.rows = ReadRows(json.Find("rows"), table.schema),
                      .total_rows = ReadInt64(json.Find("totalRows")),
                      .page_token = json.GetString("pageToken")};
}

std::string BigQueryClient::RandomJobId(std::string_view prefix) {
  return fmt::format("{}_{}", prefix, NewUuidHex());
}

bool BigQueryClient::IsValidJobId(std::string_view job_id) {
  if (job_id.empty() || job_id.size() > 1024) return false;
  return std::all_of(job_id.begin(), job_id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

}  // namespace bizon
