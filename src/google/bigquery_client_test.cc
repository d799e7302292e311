#include "google/bigquery_client.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "bizon/clock.h"
#include "google/gcs_client.h"
#include "google/google_test_support.h"
#include "testing/test_servers.h"

namespace bizon {
namespace {

TEST(BigQueryEmulatorEndpointTest, AddsHttpWithoutSchemeAndDropsTrailingSlash) {
  EXPECT_EQ(BigQueryEmulatorEndpoint(EnvOf({{"BIGQUERY_EMULATOR_HOST", "127.0.0.1:9050"}})),
            "http://127.0.0.1:9050");
  EXPECT_EQ(BigQueryEmulatorEndpoint(EnvOf({{"BIGQUERY_EMULATOR_HOST", "https://bq.test:443//"}})),
            "https://bq.test:443");
  EXPECT_EQ(BigQueryEmulatorEndpoint(EnvOf({})), std::nullopt);
  EXPECT_EQ(BigQueryEmulatorEndpoint(EnvOf({{"BIGQUERY_EMULATOR_HOST", ""}})), std::nullopt);
}

TEST(BigQueryClientTest, TheEmulatorVariableSelectsAnonymousRequests) {
  auto client = BigQueryClient::Make(
      {.project = "p", .env = EnvOf({{"BIGQUERY_EMULATOR_HOST", "localhost:9050"}})});
  ASSERT_TRUE(client) << client.error().ToString();
  EXPECT_EQ((*client)->endpoint(), "http://localhost:9050");
  EXPECT_TRUE((*client)->emulator());
  EXPECT_EQ((*client)->project(), "p");

  auto bad = BigQueryClient::Make(
      {.credentials = MakeAnonymousGoogleCredentials(), .endpoint = "bigquery.test"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), StatusCode::kInvalidArgument);
}

TEST(BigQueryClientTest, JobIdsAreCheckedBeforeAnyRequest) {
  EXPECT_TRUE(BigQueryClient::IsValidJobId("bizon_load-0001"));
  EXPECT_FALSE(BigQueryClient::IsValidJobId(""));
  EXPECT_FALSE(BigQueryClient::IsValidJobId("a.b"));
  EXPECT_FALSE(BigQueryClient::IsValidJobId(std::string(1025, 'a')));
  std::string random = BigQueryClient::RandomJobId("x");
  EXPECT_TRUE(random.starts_with("x_")) << random;
  EXPECT_TRUE(BigQueryClient::IsValidJobId(random));
  EXPECT_NE(random, BigQueryClient::RandomJobId("x"));

  // Port 1: a request would fail with a connection error, not kInvalidArgument.
  auto client = BigQueryClient::Make({.credentials = MakeAnonymousGoogleCredentials(),
                                      .endpoint = "http://127.0.0.1:1",
                                      .project = "p"});
  ASSERT_TRUE(client);
  auto job = (*client)->InsertJob({.job_id = "no spaces"}, Value::EmptyMap());
  ASSERT_FALSE(job);
  EXPECT_EQ(job.error().code(), StatusCode::kInvalidArgument);
}

TEST(BigQueryParameterTest, SendsTypedValuesAndNullsAsTheApiDocumentsThem) {
  EXPECT_EQ(BigQueryParameter::String("s", "it's").ToJson().ToJson(),
            R"({"name":"s","parameterType":{"type":"STRING"},"parameterValue":{"value":"it's"}})");
  EXPECT_EQ(BigQueryParameter::Int64("n", std::nullopt).ToJson().ToJson(),
            R"({"name":"n","parameterType":{"type":"INT64"},"parameterValue":{}})");
  EXPECT_EQ(BigQueryParameter::Bool("b", true).value, "true");
  // 2026-10-08 09:46:55.094362 UTC.
  EXPECT_EQ(BigQueryParameter::Timestamp("t", 1791452815094362).value,
            "2026-10-08 09:46:55.094362+00:00");
}

TEST(BigQueryTableTest, ReadsAndWritesTheTableResource) {
  BigQueryTable table{
      .ref = {.project = "p", .dataset = "d", .table = "t"},
      .schema = {{.name = "id", .type = "STRING", .mode = "REQUIRED"},
                 {.name = "rec",
                  .type = "RECORD",
                  .mode = "REPEATED",
                  .fields = {{.name = "x", .type = "INT64"}}}},
      .time_partitioning = BigQueryTimePartitioning{.type = "DAY", .field = "_bizon_loaded_at"},
      .clustering_fields = {"id"}};
  Value json = table.ToJson();
  EXPECT_EQ(json.FindPath("timePartitioning.field")->AsString(), "_bizon_loaded_at");
  EXPECT_EQ(json.FindPath("clustering.fields")->AsList().size(), 1u);
  auto back = BigQueryTable::FromJson(json);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(back->ref.ToString(), "p.d.t");
  ASSERT_EQ(back->schema.size(), 2u);
  EXPECT_EQ(back->schema[1].fields[0].name, "x");
  EXPECT_EQ(back->time_partitioning->type, "DAY");
  EXPECT_EQ(back->clustering_fields, std::vector<std::string>{"id"});
  EXPECT_FALSE(BigQueryTable::FromJson(Value::EmptyMap()));
}

TEST(BigQueryJobTest, AFailedJobIsAnErrorNamingTheJobTheReasonAndTheMessage) {
  auto parsed = Value::FromJson(
      R"({"jobReference":{"projectId":"p","jobId":"j1","location":"EU"},)"
      R"("status":{"state":"DONE","errorResult":{"reason":"invalid","message":"No files found"},)"
      R"("errors":[{"reason":"invalid","message":"No files found"},)"
      R"({"reason":"invalid","message":"row 3: bad value"}]}})");
  ASSERT_TRUE(parsed);
  auto job = BigQueryJob::FromJson(*parsed);
  ASSERT_TRUE(job) << job.error().ToString();
  ASSERT_TRUE(job->error);
  EXPECT_EQ(job->error->code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(job->error->message(),
            "BigQuery job p:EU.j1 failed: invalid: No files found; invalid: row 3: bad value");
  Value backend_error(Value::Map{{"reason", Value("backendError")}, {"message", Value("later")}});
  EXPECT_EQ(BigQueryJobError(job->ref, backend_error, {}).code(), StatusCode::kUnavailable);
}

// ---- tests/fakes/fake_bigquery.py --------------------------------------------------------

// Fixed-token credentials, as a service account would give after the exchange.
class FixedTokenCredentials final : public GoogleCredentials {
 public:
  explicit FixedTokenCredentials(std::string token) : token_(std::move(token)) {}
  std::string Describe() const override { return "fixed test token"; }
  std::optional<std::string> project_id() const override { return "key-project"; }

 protected:
  Result<GoogleAccessToken> FetchToken() override {
    return GoogleAccessToken{.token = token_, .expires_in_s = 3600};
  }

 private:
  std::string token_;
};

class FakeBigQuery : public FakeProcess {
 public:
  FakeBigQuery() : FakeProcess("fake_bigquery.py") {}

  /// "METHOD path" of each API request, in order.
  std::vector<std::string> Requests() {
    std::vector<std::string> out;
    Value report = Report();
    const Value* requests = report.Find("requests");
    if (requests == nullptr) return out;
    for (const Value& request : requests->AsList()) {
      out.push_back(request.GetString("method") + " " + request.GetString("path"));
    }
    return out;
  }

  /// A client of the fake, with recorded (not slept) backoff waits.
  std::unique_ptr<BigQueryClient> Client(std::shared_ptr<GoogleCredentials> credentials = nullptr) {
    if (!credentials) credentials = MakeAnonymousGoogleCredentials();
    auto client = BigQueryClient::Make(
        {.credentials = std::move(credentials),
         .endpoint = url(),
         .project = "proj",
         .retries =
             RetryPolicy{.total = 3, .backoff_factor = 1, .allowed_methods = {"GET", "POST"}},
         .sleep = [this](double s) { waits.push_back(s); }});
    return client ? std::move(*client) : nullptr;
  }

  std::vector<double> waits;
};

TEST(BigQueryClientFakeTest, SendsTheBearerTokenOnEveryRequest) {
  FakeBigQuery fake;
  ASSERT_FALSE(fake.url().empty());
  fake.Control("token", R"({"token":"ya29.test-token"})");
  auto client = fake.Client(std::make_shared<FixedTokenCredentials>("ya29.test-token"));
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->InsertDataset({.dataset = "d", .location = "EU"}));
  auto dataset = client->GetDataset("proj", "d");
  ASSERT_TRUE(dataset) << dataset.error().ToString();
  EXPECT_EQ(dataset->location, "EU");
  Value report = fake.Report();
  ASSERT_EQ(report.Find("requests")->AsList().size(), 2u);
  for (const Value& request : report.Find("requests")->AsList()) {
    EXPECT_EQ(request.GetString("authorization"), "Bearer ya29.test-token");
  }
  // Without the token the fake answers 401, which is an error (no retry loop on it).
  auto anonymous = fake.Client();
  auto refused = anonymous->GetDataset("proj", "d");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("401"), std::string::npos);
  EXPECT_EQ(fake.Violations(), "[]");
}

TEST(BigQueryClientFakeTest, PollsARunningJobToDoneAndTurnsErrorResultIntoAnError) {
  FakeBigQuery fake;
  ASSERT_FALSE(fake.url().empty());
  fake.Control("plan", R"({"job_id":"load_1","polls":2,"error_result":{"reason":"invalid",)"
                       R"("message":"Error while reading data, error message: no such field: x",)"
                       R"("location":"gs://b/f.avro"}})");
  auto client = fake.Client();
  auto job = client->RunLoad({.job_id = "load_1"}, {.source_uris = {"gs://b/f.avro"},
                                                    .destination = {.dataset = "d", .table = "t"}});
  ASSERT_FALSE(job);
  EXPECT_EQ(job.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(job.error().message(),
            "BigQuery job proj:US.load_1 failed: invalid: Error while reading data, error "
            "message: no such field: x (at gs://b/f.avro)");
  EXPECT_EQ(fake.Requests(),
            (std::vector<std::string>{"POST /bigquery/v2/projects/proj/jobs",
                                      "GET /bigquery/v2/projects/proj/jobs/load_1",
                                      "GET /bigquery/v2/projects/proj/jobs/load_1",
                                      "GET /bigquery/v2/projects/proj/jobs/load_1"}));
  // Polling backs off: 0.2 s, then doubled.
  EXPECT_EQ(fake.waits, (std::vector<double>{0.2, 0.4, 0.8}));
  EXPECT_EQ(fake.Violations(), "[]");
}

TEST(BigQueryClientFakeTest, ASecondInsertOfTheSameJobIdWaitsForTheFirstJob) {
  FakeBigQuery fake;
  ASSERT_FALSE(fake.url().empty());
  fake.Control("plan", R"({"job_id":"dml_1","num_dml_affected_rows":1,)"
                       R"("statement_type":"UPDATE"})");
  auto client = fake.Client();
  BigQueryQueryConfig update{.query = "UPDATE d.t SET owner = @owner WHERE id = @id",
                             .parameters = {BigQueryParameter::String("owner", "1@h"),
                                            BigQueryParameter::String("id", "x")}};
  auto first = client->RunQuery({.job_id = "dml_1"}, update);
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_EQ(first->num_dml_affected_rows, 1);
  auto second = client->RunJob({.job_id = "dml_1"}, update.ToJson());
  ASSERT_TRUE(second) << second.error().ToString();
  EXPECT_TRUE(second->already_existed);
  EXPECT_EQ(second->num_dml_affected_rows, 1);
  std::vector<std::string> requests = fake.Requests();
  EXPECT_EQ(std::count(requests.begin(), requests.end(), "POST /bigquery/v2/projects/proj/jobs"),
            2);
  EXPECT_EQ(fake.Violations(), "[]");
}

TEST(BigQueryClientFakeTest, RetriesRateLimitAndBackendErrorsThenGivesUp) {
  FakeBigQuery fake;
  ASSERT_FALSE(fake.url().empty());
  fake.Control("throttle", R"({"path_contains":"/jobs","method":"POST","status":403,)"
                           R"("reason":"rateLimitExceeded","times":2})");
  fake.Control("throttle", R"({"path_contains":"/jobs/q_1","status":503,)"
                           R"("reason":"backendError","times":1})");
  fake.Control("plan", R"({"job_id":"q_1","polls":1})");
  auto client = fake.Client();
  auto job = client->RunJob({.job_id = "q_1"}, BigQueryQueryConfig{.query = "SELECT 1"}.ToJson());
  ASSERT_TRUE(job) << job.error().ToString();
  EXPECT_TRUE(job->done());
  EXPECT_FALSE(job->already_existed);
  std::vector<std::string> requests = fake.Requests();
  EXPECT_EQ(std::count(requests.begin(), requests.end(), "POST /bigquery/v2/projects/proj/jobs"),
            3);

  // A 500 backendError past the retry budget is kUnavailable with Google's message.
  fake.Control("throttle", R"({"path_contains":"/datasets","status":500,)"
                           R"("reason":"backendError","times":10})");
  auto dataset = client->GetDataset("proj", "d");
  ASSERT_FALSE(dataset);
  EXPECT_EQ(dataset.error().code(), StatusCode::kUnavailable);
  EXPECT_NE(dataset.error().message().find("backendError: An internal error occurred"),
            std::string::npos)
      << dataset.error().message();
  // A job that failed with backendError is worth another job: kUnavailable too.
  fake.Control("plan", R"({"job_id":"q_2","error_result":{"reason":"backendError",)"
                       R"("message":"Backend error. Job aborted."}})");
  auto failed =
      client->RunJob({.job_id = "q_2"}, BigQueryQueryConfig{.query = "SELECT 1"}.ToJson());
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(fake.Violations(), "[]");
}

TEST(BigQueryClientFakeTest, QueryFollowsPageTokensAndSendsNamedParameters) {
  FakeBigQuery fake;
  ASSERT_FALSE(fake.url().empty());
  fake.Control("plan", R"({"query":"SELECT id, n FROM d.t WHERE id > @after","schema":[)"
                       R"({"name":"id","type":"STRING"},{"name":"n","type":"INTEGER"}],)"
                       R"("rows":[["a","1"],["b","2"],["c",null],["d","4"],["e","5"]]})");
  auto client = fake.Client();
  auto result = client->Query({.query = "SELECT id, n FROM d.t WHERE id > @after",
                               .parameters = {BigQueryParameter::String("after", "")},
                               .max_results = 2});
  ASSERT_TRUE(result) << result.error().ToString();
  ASSERT_EQ(result->rows.size(), 5u);
  EXPECT_EQ(result->Cell(4, "id").AsString(), "e");
  EXPECT_TRUE(result->Cell(2, "n").is_null());
  EXPECT_TRUE(result->Cell(0, "missing").is_null());
  EXPECT_EQ(result->total_rows, 5);
  EXPECT_EQ(fake.Requests().size(), 3u);  // jobs.query, then two getQueryResults pages.
  // Undeclared parameters are what the fake checks: using one is a violation.
  auto bad = client->Query({.query = "SELECT @nope"});
  EXPECT_FALSE(bad);
  EXPECT_NE(fake.Violations(), "[]");
}

TEST(BigQueryClientFakeTest, AQueryNotCompleteWithinTheTimeoutIsWaitedFor) {
  FakeBigQuery fake;
  ASSERT_FALSE(fake.url().empty());
  fake.Control("plan", R"({"query":"SELECT 42 AS answer","polls":2,)"
                       R"("schema":[{"name":"answer","type":"INTEGER"}],"rows":[["42"]]})");
  auto client = fake.Client();
  auto result = client->Query({.query = "SELECT 42 AS answer", .timeout_ms = 10});
  ASSERT_TRUE(result) << result.error().ToString();
  EXPECT_TRUE(result->job_complete);
  EXPECT_EQ(result->Cell(0, "answer").AsString(), "42");
  std::vector<std::string> requests = fake.Requests();
  ASSERT_GE(requests.size(), 4u);
  EXPECT_EQ(requests.front(), "POST /bigquery/v2/projects/proj/queries");
  EXPECT_EQ(requests.back(), "GET /bigquery/v2/projects/proj/queries/job_fake_0");
  EXPECT_EQ(fake.Violations(), "[]");
}

// ---- the BigQuery emulator (bqemulator) --------------------------------------------------

// BIGQUERY_EMULATOR_HOST names it (scripts/test-servers.sh start bigquery); skipped when unset,
// failed under CI=true, where it must be there.
std::unique_ptr<BigQueryClient> EmulatorClient() {
  auto client = BigQueryClient::Make({.project = "test-project"});
  if (!client || !(*client)->emulator()) return nullptr;
  return std::move(*client);
}

#define REQUIRE_EMULATOR() BIZON_REQUIRE_BIGQUERY_EMULATOR()

std::string UniqueName(std::string_view prefix) {
  static std::atomic<int> counter{0};
  return fmt::format("{}_{}_{}_{}", prefix, getpid(), NowMicros() % 1000000000, ++counter);
}

TEST(BigQueryClientEmulatorTest, DatasetsAndTablesWithPartitioningAndClustering) {
  REQUIRE_EMULATOR();
  auto client = EmulatorClient();
  ASSERT_TRUE(client);
  std::string dataset = UniqueName("bqc");
  auto created = client->InsertDataset({.dataset = dataset, .location = "EU"});
  ASSERT_TRUE(created) << created.error().ToString();
  EXPECT_EQ(created->location, "EU");
  auto again = client->InsertDataset({.dataset = dataset});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), StatusCode::kAborted);
  EXPECT_TRUE(client->InsertDataset({.dataset = dataset}, /*exists_ok=*/true));
  auto missing = client->GetDataset("test-project", dataset + "_nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.error().message().find("notFound"), std::string::npos);

  BigQueryTable table{
      .ref = {.dataset = dataset, .table = "events"},
      .schema = {{.name = "_source_record_id", .type = "STRING", .mode = "REQUIRED"},
                 {.name = "_bizon_loaded_at", .type = "TIMESTAMP"},
                 {.name = "_source_data", .type = "STRING"}},
      .time_partitioning = BigQueryTimePartitioning{.type = "DAY", .field = "_bizon_loaded_at"},
      .clustering_fields = {"_source_record_id"}};
  auto inserted = client->InsertTable(table);
  ASSERT_TRUE(inserted) << inserted.error().ToString();
  auto fetched = client->GetTable(table.ref);
  ASSERT_TRUE(fetched) << fetched.error().ToString();
  ASSERT_EQ(fetched->schema.size(), 3u);
  EXPECT_EQ(fetched->schema[0].mode, "REQUIRED");
  ASSERT_TRUE(fetched->time_partitioning);
  EXPECT_EQ(fetched->time_partitioning->field, "_bizon_loaded_at");
  EXPECT_EQ(fetched->clustering_fields, std::vector<std::string>{"_source_record_id"});
  auto duplicate = client->InsertTable(table);
  ASSERT_FALSE(duplicate);
  EXPECT_EQ(duplicate.error().code(), StatusCode::kAborted);

  auto patched = client->PatchTable({.ref = table.ref, .description = "bizon events"});
  ASSERT_TRUE(patched) << patched.error().ToString();
  EXPECT_EQ(patched->description, "bizon events");
  EXPECT_EQ(patched->schema.size(), 3u);

  EXPECT_TRUE(client->DeleteTable(table.ref).ok());
  EXPECT_EQ(client->GetTable(table.ref).error().code(), StatusCode::kNotFound);
  EXPECT_EQ(client->DeleteTable(table.ref).code(), StatusCode::kNotFound);
  EXPECT_TRUE(client->DeleteTable(table.ref, /*missing_ok=*/true).ok());
  EXPECT_TRUE(client->DeleteDataset("test-project", dataset, /*delete_contents=*/true).ok());
}

TEST(BigQueryClientEmulatorTest, QueryJobsWithParametersDmlCountsAndErrors) {
  REQUIRE_EMULATOR();
  auto client = EmulatorClient();
  ASSERT_TRUE(client);
  std::string dataset = UniqueName("bqq");
  ASSERT_TRUE(client->InsertDataset({.dataset = dataset}));
  BigQueryDataset in{.project = "test-project", .dataset = dataset};
  auto run = [&](std::string sql, std::vector<BigQueryParameter> parameters = {}) {
    return client->RunQuery(
        {.job_id = BigQueryClient::RandomJobId("test")},
        {.query = std::move(sql), .parameters = std::move(parameters), .default_dataset = in});
  };
  ASSERT_TRUE(run("CREATE TABLE IF NOT EXISTS t (id STRING, n INT64, at TIMESTAMP, ok BOOL)"));
  // A value with a quote goes in as a parameter, never into the SQL text.
  auto inserted = run(
      "INSERT INTO t (id, n, at, ok) VALUES (@id, @n, @at, @ok), ('b', 2, NULL, NULL)",
      {BigQueryParameter::String("id", "it's"), BigQueryParameter::Int64("n", 1),
       BigQueryParameter::Timestamp("at", 1791452815094362), BigQueryParameter::Bool("ok", true)});
  ASSERT_TRUE(inserted) << inserted.error().ToString();
  EXPECT_EQ(inserted->num_dml_affected_rows, 2);
  auto updated = run("UPDATE t SET n = 10 WHERE id = @id AND n = @n",
                     {BigQueryParameter::String("id", "it's"), BigQueryParameter::Int64("n", 1)});
  ASSERT_TRUE(updated) << updated.error().ToString();
  EXPECT_EQ(updated->num_dml_affected_rows, 1);
  auto not_again = run("UPDATE t SET n = 10 WHERE id = @id AND n = @n",
                       {BigQueryParameter::String("id", "it's"), BigQueryParameter::Int64("n", 1)});
  ASSERT_TRUE(not_again);
  EXPECT_EQ(not_again->num_dml_affected_rows, 0);

  auto rows = run("SELECT id, n, at, ok FROM t ORDER BY id");
  ASSERT_TRUE(rows) << rows.error().ToString();
  ASSERT_EQ(rows->rows.size(), 2u);
  EXPECT_EQ(rows->Cell(0, "id").AsString(), "b");
  EXPECT_TRUE(rows->Cell(0, "at").is_null());
  EXPECT_EQ(rows->Cell(1, "id").AsString(), "it's");
  EXPECT_EQ(rows->Cell(1, "n").AsString(), "10");
  EXPECT_EQ(rows->Cell(1, "at").AsString(), "1791452815094362");
  EXPECT_EQ(rows->Cell(1, "ok").AsString(), "true");

  // jobs.query: the emulator ignores defaultDataset there (BigQuery does not), so the table
  // name is qualified.
  auto read =
      client->Query({.query = fmt::format(
                         "SELECT COUNT(*) AS c FROM `test-project.{}.t` WHERE n > @min", dataset),
                     .parameters = {BigQueryParameter::Int64("min", 5)},
                     .default_dataset = in});
  ASSERT_TRUE(read) << read.error().ToString();
  EXPECT_EQ(read->Cell(0, "c").AsString(), "1");

  auto failed = run("SELECT * FROM no_such_table");
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message().find("failed: notFound: Not found: Table"), std::string::npos)
      << failed.error().message();
  auto failed_read = client->Query({.query = "SELECT * FROM no_such_table", .default_dataset = in});
  ASSERT_FALSE(failed_read);
  EXPECT_TRUE(client->DeleteDataset("test-project", dataset, /*delete_contents=*/true).ok());
}

TEST(BigQueryClientEmulatorTest, LoadsFromGcsCopiesAndListsTableData) {
  REQUIRE_EMULATOR();
  const char* bucket = std::getenv("BIZON_GCS_BUCKET");
  if (std::getenv("STORAGE_EMULATOR_HOST") == nullptr || bucket == nullptr) {
    BIZON_SKIP_OR_FAIL("the GCS emulator is not configured (scripts/test-servers.sh start gcs)");
  }
  auto client = EmulatorClient();
  ASSERT_TRUE(client);
  auto gcs = GcsClient::Make({});
  ASSERT_TRUE(gcs) << gcs.error().ToString();
  ASSERT_TRUE((*gcs)->CreateBucket("test-project", bucket).ok());
  std::string dataset = UniqueName("bql");
  ASSERT_TRUE(client->InsertDataset({.dataset = dataset}));
  std::string object = dataset + "/rows.jsonl";
  ASSERT_TRUE((*gcs)->Upload(bucket, object, "{\"id\":\"a\",\"n\":1}\n{\"id\":\"b\",\"n\":2}\n"));

  BigQueryTableRef target{.project = "test-project", .dataset = dataset, .table = "loaded"};
  BigQuerySchema schema = {{.name = "id", .type = "STRING"}, {.name = "n", .type = "INT64"}};
  std::string job_id = BigQueryClient::RandomJobId("load");
  auto loaded = client->RunLoad({.job_id = job_id},
                                {.source_uris = {fmt::format("gs://{}/{}", bucket, object)},
                                 .source_format = "NEWLINE_DELIMITED_JSON",
                                 .destination = target,
                                 .schema = schema});
  ASSERT_TRUE(loaded) << loaded.error().ToString();
  EXPECT_TRUE(loaded->done());
  auto fetched = client->GetJob({.job_id = job_id});
  ASSERT_TRUE(fetched) << fetched.error().ToString();
  EXPECT_EQ(fetched->state, "DONE");

  BigQueryTableRef copy{.project = "test-project", .dataset = dataset, .table = "copied"};
  auto copied = client->RunCopy({.job_id = BigQueryClient::RandomJobId("copy")},
                                {.sources = {target}, .destination = copy});
  ASSERT_TRUE(copied) << copied.error().ToString();
  auto page = client->ListTableData(copy);
  ASSERT_TRUE(page) << page.error().ToString();
  ASSERT_EQ(page->rows.size(), 2u);

  auto missing =
      client->RunLoad({.job_id = BigQueryClient::RandomJobId("load")},
                      {.source_uris = {fmt::format("gs://{}/{}/none.jsonl", bucket, dataset)},
                       .source_format = "NEWLINE_DELIMITED_JSON",
                       .destination = target,
                       .schema = schema});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("failed: invalid:"), std::string::npos)
      << missing.error().message();
  EXPECT_TRUE((*gcs)->Delete(bucket, object).ok());
  EXPECT_TRUE(client->DeleteDataset("test-project", dataset, /*delete_contents=*/true).ok());
}

}  // namespace
}  // namespace bizon
