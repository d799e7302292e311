// BigQueryClient: BigQuery through its REST API v2 (datasets, tables, jobs, query results,
// tabledata), over the HTTP toolkit's HttpSession (libcurl).
//
// | call                 | request                                                            |
// |----------------------|--------------------------------------------------------------------|
// | GetDataset           | GET  /bigquery/v2/projects/P/datasets/D                            |
// | InsertDataset        | POST /bigquery/v2/projects/P/datasets                              |
// | GetTable             | GET  /bigquery/v2/projects/P/datasets/D/tables/T                   |
// | InsertTable          | POST /bigquery/v2/projects/P/datasets/D/tables (schema,            |
// |                      | timePartitioning, clustering)                                      |
// | PatchTable           | PATCH /bigquery/v2/projects/P/datasets/D/tables/T                  |
// | DeleteTable          | DELETE /bigquery/v2/projects/P/datasets/D/tables/T                 |
// | InsertJob            | POST /bigquery/v2/projects/P/jobs (load, copy or query, with the   |
// |                      | caller's jobId)                                                    |
// | GetJob               | GET  /bigquery/v2/projects/P/jobs/J?location=L                     |
// | GetQueryResults      | GET  /bigquery/v2/projects/P/queries/J?location=L&pageToken=...    |
// | ListTableData        | GET  /bigquery/v2/projects/P/datasets/D/tables/T/data              |
//
// Exactly-once jobs: every job is inserted with a job id the caller chooses (derive it from what
// the job does, e.g. the pipeline job and the iteration range of a load). BigQuery refuses a
// second job with an id it has seen (409 "Already Exists: Job ..."); InsertJob then fetches the
// existing job instead of failing, so inserting the same job twice (a retried request whose first
// answer was lost, a resumed run) runs it once. RunJob = InsertJob + WaitForJob.
//
// A job is done when `status.state` is "DONE"; it failed when `status.errorResult` is set. The
// failure becomes an error naming the job id, the reason and the message ("BigQuery job
// p:US.bizon_load_x failed: invalid: No files found that match the pattern ..."); backendError,
// rateLimitExceeded and internalError reasons are kUnavailable (try again, with a new job id),
// the others kFailedPrecondition.
//
// Queries are GoogleSQL (useLegacySql false) and take values only as named query parameters
// (`@name` in the SQL, BigQueryParameter here): never build SQL text from values.
//
// Errors: 404 is kNotFound, 409 kAborted ("already exists"), other 4xx kFailedPrecondition, 429
// and 5xx (after the retries) kUnavailable; messages carry Google's `error.message` and reason.
// Errors carry no failure class: callers (the bigquery destination, the backend) tag them.
//
// Retries follow the project's HTTP policy (RetryPolicy: 429 and 5xx, connection failures,
// exponential backoff), and additionally a 403 or 400 whose error reason is rateLimitExceeded or
// backendError (BigQuery throttles with 403 rateLimitExceeded), on the same budget. POSTs are
// retried too: jobs.insert is idempotent thanks to the job id; a retried datasets/tables insert
// whose first attempt landed answers 409, which `exists_ok` accepts.
//
// Endpoint: `options.endpoint` when set, else BIGQUERY_EMULATOR_HOST (with or without a scheme;
// http:// is assumed without one), else https://bigquery.googleapis.com. With the emulator
// variable set no token is sent, as Google's own SDKs do; otherwise every request carries the
// credentials' bearer token (scope bigquery).
//
// Results: `formatOptions.useInt64Timestamp` is always asked for, so TIMESTAMP cells are int64
// microseconds since the epoch (as text) from BigQuery and from the emulator alike. Every cell
// is a string (INT64, NUMERIC, BOOL "true"/"false" included), a null, a list (REPEATED) or a
// map (RECORD, keyed by field name), as the API sends it.
//
// Thread-safety: every call may be made from several threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"
#include "bizon/value.h"
#include "google/credentials.h"
#include "http/http_session.h"

namespace bizon {

inline constexpr std::string_view kBigQueryProductionEndpoint = "https://bigquery.googleapis.com";
inline constexpr std::string_view kBigQueryScope = "https://www.googleapis.com/auth/bigquery";

/// One column of a table schema (tables.insert, load jobs, query result schemas).
struct BigQueryField {
  std::string name;
  /// STRING, INT64, FLOAT64, NUMERIC, BIGNUMERIC, BOOL, TIMESTAMP, DATE, TIME, DATETIME, JSON,
  /// BYTES, GEOGRAPHY, RECORD (or the legacy names INTEGER, FLOAT, BOOLEAN, STRUCT).
  std::string type;
  /// NULLABLE (when empty), REQUIRED or REPEATED.
  std::string mode;
  std::string description;
  /// Sent as `defaultValueExpression` when not empty.
  std::string default_value_expression;
  /// The sub-fields of a RECORD.
  std::vector<BigQueryField> fields;

  Value ToJson() const;
  static Result<BigQueryField> FromJson(const Value& json);
};

using BigQuerySchema = std::vector<BigQueryField>;
Value BigQuerySchemaToJson(const BigQuerySchema& schema);
/// Reads `{"fields":[...]}`; a missing schema is an empty one.
Result<BigQuerySchema> BigQuerySchemaFromJson(const Value* schema);

struct BigQueryTimePartitioning {
  /// DAY, HOUR, MONTH or YEAR.
  std::string type = "DAY";
  /// Empty: ingestion-time partitioning (_PARTITIONTIME).
  std::string field;
  std::optional<int64_t> expiration_ms;

  Value ToJson() const;
};

struct BigQueryTableRef {
  std::string project;
  std::string dataset;
  std::string table;

  /// "project.dataset.table", for messages.
  std::string ToString() const;
  Value ToJson() const;
};

struct BigQueryDataset {
  std::string project;
  std::string dataset;
  /// "US", "EU", a region; empty leaves it to BigQuery (US).
  std::string location;
  std::string description;
};

struct BigQueryTable {
  BigQueryTableRef ref;
  BigQuerySchema schema;
  std::optional<BigQueryTimePartitioning> time_partitioning;
  std::vector<std::string> clustering_fields;
  std::string description;
  /// When BigQuery drops the table (`expirationTime`, milliseconds since the epoch).
  std::optional<int64_t> expiration_time_ms;
  /// `tableConstraints.primaryKey.columns`: a primary key (BigQuery's are NOT ENFORCED), which
  /// change data capture through the Storage Write API needs.
  std::vector<std::string> primary_key;
  /// `maxStaleness`, an INTERVAL such as "0-0 0 0:15:0": how old the CDC changes applied to a
  /// query's answer may be.
  std::string max_staleness;
  /// Answers only: TABLE, VIEW, ...; the row count BigQuery reports (`numRows`).
  std::string type;
  std::optional<int64_t> num_rows;

  /// The table resource JSON (tableReference, schema, timePartitioning, clustering,
  /// description, expirationTime, tableConstraints, maxStaleness).
  Value ToJson() const;
  static Result<BigQueryTable> FromJson(const Value& json);
};

/// A named query parameter: `@name` in the SQL. A nullopt value is SQL NULL of that type.
struct BigQueryParameter {
  std::string name;
  /// STRING, INT64, BOOL, FLOAT64, NUMERIC, TIMESTAMP, DATE, JSON, BYTES ...
  std::string type;
  std::optional<std::string> value;

  static BigQueryParameter String(std::string name, std::optional<std::string> value);
  static BigQueryParameter Int64(std::string name, std::optional<int64_t> value);
  static BigQueryParameter Bool(std::string name, std::optional<bool> value);
  /// Microseconds since the epoch, sent as "YYYY-MM-DD HH:MM:SS.ffffff+00".
  static BigQueryParameter Timestamp(std::string name, std::optional<int64_t> epoch_us);

  Value ToJson() const;
};

/// Where a job lives: its project, id and location (empty location: the API's default).
struct BigQueryJobRef {
  std::string project;
  std::string job_id;
  std::string location;

  /// "project:location.job_id", as the console writes it.
  std::string ToString() const;
};

struct BigQueryJob {
  BigQueryJobRef ref;
  /// PENDING, RUNNING or DONE.
  std::string state;
  /// `status.errorResult`: set when the job failed (DONE with an error).
  std::optional<Status> error;
  /// `status.errors` messages (warnings too), "reason: message" each.
  std::vector<std::string> errors;
  /// `statistics.query.statementType` (INSERT, UPDATE, CREATE_TABLE, SELECT, ...).
  std::string statement_type;
  /// `statistics.query.numDmlAffectedRows` of a DML job.
  std::optional<int64_t> num_dml_affected_rows;
  /// `statistics.load.outputRows` of a load job.
  std::optional<int64_t> output_rows;
  /// True when InsertJob found the job already there (409 on our job id).
  bool already_existed = false;
  /// The whole job resource as the API answered it.
  Value resource;

  bool done() const { return state == "DONE"; }
  static Result<BigQueryJob> FromJson(const Value& json);
};

struct BigQueryLoadConfig {
  /// gs:// URIs (wildcards allowed).
  std::vector<std::string> source_uris;
  /// AVRO, PARQUET, NEWLINE_DELIMITED_JSON, CSV, ORC.
  std::string source_format = "AVRO";
  BigQueryTableRef destination;
  /// Empty: the table's (or, for a new table, autodetected by BigQuery).
  BigQuerySchema schema;
  /// WRITE_APPEND, WRITE_TRUNCATE or WRITE_EMPTY.
  std::string write_disposition = "WRITE_APPEND";
  /// CREATE_IF_NEEDED or CREATE_NEVER.
  std::string create_disposition = "CREATE_IF_NEEDED";
  /// ALLOW_FIELD_ADDITION, ALLOW_FIELD_RELAXATION.
  std::vector<std::string> schema_update_options;
  std::optional<BigQueryTimePartitioning> time_partitioning;
  std::vector<std::string> clustering_fields;
  /// AVRO: read logicalType annotations (timestamp-micros -> TIMESTAMP ...).
  bool use_avro_logical_types = true;
  bool ignore_unknown_values = false;
  int64_t max_bad_records = 0;

  Value ToJson() const;
};

struct BigQueryCopyConfig {
  std::vector<BigQueryTableRef> sources;
  BigQueryTableRef destination;
  std::string write_disposition = "WRITE_TRUNCATE";
  std::string create_disposition = "CREATE_IF_NEEDED";

  Value ToJson() const;
};

struct BigQueryQueryConfig {
  std::string query;
  std::vector<BigQueryParameter> parameters;
  /// Unqualified table names resolve against this dataset when set.
  std::optional<BigQueryDataset> default_dataset;
  /// Results written to this table (with the dispositions below) when set.
  std::optional<BigQueryTableRef> destination;
  std::string write_disposition;
  std::string create_disposition;
  /// jobs.query only: how long the call waits for the job before answering jobComplete false.
  int64_t timeout_ms = 10000;
  /// Rows per result page; 0 leaves it to the server.
  int64_t max_results = 0;

  /// The `configuration.query` object of jobs.insert.
  Value ToJson() const;
};

/// A result row: one cell per schema field, in schema order (see the header comment).
using BigQueryRow = std::vector<Value>;

struct BigQueryQueryResult {
  BigQueryJobRef job;
  BigQuerySchema schema;
  std::vector<BigQueryRow> rows;
  std::optional<int64_t> total_rows;
  std::optional<int64_t> num_dml_affected_rows;
  /// Empty when the rows above are the last page.
  std::string page_token;
  bool job_complete = false;

  /// The index of `column` in the schema; nullopt when absent.
  std::optional<size_t> ColumnIndex(std::string_view column) const;
  /// The cell of `column` in row `row`; null when the column is unknown.
  const Value& Cell(size_t row, std::string_view column) const;
};

struct BigQueryRows {
  std::vector<BigQueryRow> rows;
  std::optional<int64_t> total_rows;
  std::string page_token;
};

struct BigQueryClientOptions {
  /// Used unless the endpoint is the emulator's; null: Application Default Credentials (scope
  /// bigquery), made by Make().
  std::shared_ptr<GoogleCredentials> credentials;
  /// scheme://host[:port]; empty: BIGQUERY_EMULATOR_HOST, else production.
  std::string endpoint;
  /// The project jobs run in when a call names none (the billing project). Empty: the
  /// credentials' project_id.
  std::string project;
  /// Where jobs run when a call names no location (e.g. "EU"); empty: BigQuery's default.
  std::string location;
  HttpTimeouts timeouts = {.connect_s = 10, .read_s = 120};
  RetryPolicy retries = RetryPolicy{.total = 8,
                                    .backoff_factor = 1,
                                    .backoff_max = 32,
                                    .allowed_methods = {"GET", "POST", "PATCH", "DELETE"}};
  /// Job polling: the first wait, doubled up to `poll_max_s`, until `job_timeout_s` in total.
  double poll_initial_s = 0.2;
  double poll_max_s = 5;
  double job_timeout_s = 6 * 3600;
  HttpSleepFunction sleep = ScaledSleep;
  /// Default: getenv.
  GoogleEnvFunction env;
};

class BigQueryClient {
 public:
  /// An unusable endpoint is kInvalidArgument.
  static Result<std::unique_ptr<BigQueryClient>> Make(BigQueryClientOptions options);

  /// Where requests go, e.g. "http://127.0.0.1:9050" (no trailing slash).
  const std::string& endpoint() const { return endpoint_; }
  /// True when the endpoint came from BIGQUERY_EMULATOR_HOST (no token is sent).
  bool emulator() const { return emulator_; }
  /// The default project (options.project, else the credentials'); may be empty.
  const std::string& project() const { return project_; }
  const std::string& location() const { return options_.location; }

  // Datasets.
  /// A missing dataset is kNotFound.
  Result<BigQueryDataset> GetDataset(std::string_view project, std::string_view dataset);
  /// An existing dataset is kAborted, or fetched and returned when `exists_ok`.
  Result<BigQueryDataset> InsertDataset(const BigQueryDataset& dataset, bool exists_ok = false);
  /// A missing dataset is ok when `missing_ok`. `delete_contents` drops its tables too.
  Status DeleteDataset(std::string_view project, std::string_view dataset, bool delete_contents,
                       bool missing_ok = false);

  // Tables.
  /// A missing table is kNotFound.
  Result<BigQueryTable> GetTable(const BigQueryTableRef& ref);
  /// An existing table is kAborted, or fetched and returned when `exists_ok`.
  Result<BigQueryTable> InsertTable(const BigQueryTable& table, bool exists_ok = false);
  /// Sends the non-empty parts of `table` (schema, timePartitioning, clustering, description)
  /// as a PATCH; BigQuery keeps the rest. Returns the table as patched.
  Result<BigQueryTable> PatchTable(const BigQueryTable& table);
  /// A missing table is kNotFound, or ok when `missing_ok`.
  Status DeleteTable(const BigQueryTableRef& ref, bool missing_ok = false);

  // Jobs.
  /// Inserts a job with `configuration` (the jobs.insert `configuration` object, e.g. {"load":
  /// {...}}) under `ref` (empty project/location: the client's). A 409 on the job id fetches the
  /// existing job (already_existed = true). Does not wait. `media`: the data of a load job,
  /// sent with the job through the media upload endpoint (uploadType=multipart) instead of
  /// sourceUris.
  Result<BigQueryJob> InsertJob(const BigQueryJobRef& ref, const Value& configuration,
                                std::string_view media = {});
  /// A missing job is kNotFound.
  Result<BigQueryJob> GetJob(const BigQueryJobRef& ref);
  /// Polls `job` until DONE; a job that failed (errorResult) is its error. kUnavailable after
  /// `job_timeout_s`.
  Result<BigQueryJob> WaitForJob(BigQueryJob job);
  /// InsertJob then WaitForJob.
  Result<BigQueryJob> RunJob(const BigQueryJobRef& ref, const Value& configuration);

  Result<BigQueryJob> RunLoad(const BigQueryJobRef& ref, const BigQueryLoadConfig& load);
  Result<BigQueryJob> RunCopy(const BigQueryJobRef& ref, const BigQueryCopyConfig& copy);
  /// Runs a query job (DDL, DML or SELECT) to completion and returns its first page of rows
  /// (all rows with `all_pages`), with num_dml_affected_rows for DML.
  Result<BigQueryQueryResult> RunQuery(const BigQueryJobRef& ref, const BigQueryQueryConfig& query,
                                       bool all_pages = true);
  /// jobs.query (the synchronous form, a server-chosen job id), waiting for the job through
  /// getQueryResults when it is not complete at once. For reads; use RunQuery for statements that
  /// must run once.
  Result<BigQueryQueryResult> Query(const BigQueryQueryConfig& query, bool all_pages = true);
  /// One page of a finished query job's rows.
  Result<BigQueryQueryResult> GetQueryResults(const BigQueryJobRef& ref,
                                              std::string_view page_token = "",
                                              int64_t max_results = 0);

  /// One page of a table's rows (tabledata.list).
  Result<BigQueryRows> ListTableData(const BigQueryTableRef& ref, std::string_view page_token = "",
                                     int64_t max_results = 0);

  /// A fresh random job id "<prefix>_<32 hex>" (for jobs that need no determinism).
  static std::string RandomJobId(std::string_view prefix = "bizon");
  /// Whether `job_id` is a valid BigQuery job id (letters, digits, '_' and '-', at most 1024).
  static bool IsValidJobId(std::string_view job_id);

 private:
  BigQueryClient(BigQueryClientOptions options, std::string endpoint, bool emulator,
                 std::string project);

  Result<HttpResponse> Send(HttpRequest request);
  std::string ProjectUrl(std::string_view project) const;
  BigQueryJobRef Complete(const BigQueryJobRef& ref) const;
  Result<BigQueryQueryResult> FetchAllPages(BigQueryQueryResult first, int64_t max_results);

  BigQueryClientOptions options_;
  std::string endpoint_;
  bool emulator_ = false;
  std::string project_;
  std::unique_ptr<HttpSession> session_;
};

/// The endpoint `BIGQUERY_EMULATOR_HOST` names, with http:// added when it has no scheme and
/// trailing slashes removed; nullopt when it is unset or empty.
std::optional<std::string> BigQueryEmulatorEndpoint(const GoogleEnvFunction& env);

/// The error a failed job's `status.errorResult` (a {reason, message, location} object) means.
Status BigQueryJobError(const BigQueryJobRef& ref, const Value& error_result,
                        const std::vector<std::string>& errors);

}  // namespace bizon
