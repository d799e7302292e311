// BigQueryBackend against the BigQuery emulator (`scripts/test-servers.sh start bigquery`): what
// only the BigQuery implementation has (the dataset check and create_schema, state that outlives
// the instance, the lease-row run lock and its heartbeat, identifier checks). Without the
// emulator every test is skipped, saying so, and fails under CI=true. The shared contract is in
// backend_conformance_test.cc.
#include "engine/backend/bigquery_backend.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "bizon/backend.h"
#include "bizon/clock.h"
#include "bizon/status.h"
#include "engine/backend/backend_factory.h"
#include "engine/backend/backend_test_support.h"
#include "testing/test_servers.h"

namespace bizon {
namespace {

using testing_support::BigQueryHarness;
using testing_support::kKey;
using testing_support::kOtherKey;
using testing_support::ValueOrDie;

class BigQueryBackendTest : public testing::Test {
 protected:
  void SetUp() override {
    if (std::string reason = harness_->SkipReason(); !reason.empty()) BIZON_SKIP_OR_FAIL(reason);
  }

  /// Another instance on the harness's dataset, as a second process would open it.
  std::unique_ptr<BigQueryBackend> Reopen(double heartbeat_s = 60) {
    auto backend = ValueOrDie(BigQueryBackend::Open({.project = harness_->project(),
                                                     .dataset = harness_->dataset(),
                                                     .lock_heartbeat_s = heartbeat_s}));
    Status migrated = backend->Migrate();
    EXPECT_TRUE(migrated.ok()) << migrated.ToString();
    return backend;
  }
  std::string LockTable() const { return harness_->Table("bizon_run_locks"); }

  std::unique_ptr<BigQueryHarness> harness_ = std::make_unique<BigQueryHarness>();
};

TEST_F(BigQueryBackendTest, StateSurvivesARestart) {
  std::string job_id;
  {
    BigQueryBackend& first = *harness_->bigquery();
    StreamJob job = ValueOrDie(first.CreateStreamJob(kKey, "incremental", int64_t{7}, "1@host"));
    job_id = job.id;
    ASSERT_TRUE(first.UpdateStreamJobStatus(job.id, JobStatus::kRunning, std::nullopt).ok());
    DestinationCursor cursor = testing_support::MakeCursor(job, "file", 0, 4, 50, true);
    cursor.destination_state = R"({"file_length": 10})";
    ASSERT_TRUE(first.CreateDestinationCursor(cursor).ok());
    harness_->bigquery().reset();  // The process ends.
  }
  auto second = Reopen();
  EXPECT_EQ(ValueOrDie(second->SchemaVersion()), BigQueryBackend::LatestSchemaVersion());
  std::optional<StreamJob> running = ValueOrDie(second->GetRunningStreamJob(kKey));
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->id, job_id);
  EXPECT_EQ(running->total_records_to_fetch, 7);
  std::optional<DestinationCursor> last = ValueOrDie(second->GetLastDestinationCursor(job_id));
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->to_source_iteration, 4);
  EXPECT_EQ(last->pagination, R"({"cursor": 5})");
  EXPECT_EQ(last->destination_state, R"({"file_length": 10})");
  EXPECT_EQ(ValueOrDie(second->GetWrittenRowCount(job_id)), 50);
  // Migrating again changes nothing.
  ASSERT_TRUE(second->Migrate().ok());
  EXPECT_EQ(ValueOrDie(second->GetRunningStreamJob(kKey))->id, job_id);
}

TEST_F(BigQueryBackendTest, AMissingDatasetIsAnErrorUnlessCreateSchema) {
  std::string dataset = "bizon_backend_missing_" + NewUuidHex().substr(0, 12);
  auto missing =
      ValueOrDie(BigQueryBackend::Open({.project = harness_->project(), .dataset = dataset}));
  Status refused = missing->Migrate();
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.failure_class(), FailureClass::kBackend);
  EXPECT_NE(refused.message().find("Schema or dataset " + harness_->project() + "." + dataset +
                                   " does not exist in the database, you need to create it first"),
            std::string::npos)
      << refused.message();

  auto created = ValueOrDie(BigQueryBackend::Open({.project = harness_->project(),
                                                   .dataset = dataset,
                                                   .create_schema = true,
                                                   .location = "EU"}));
  ASSERT_TRUE(created->Migrate().ok());
  auto info = created->client().GetDataset(harness_->project(), dataset);
  ASSERT_TRUE(info) << info.error().ToString();
  EXPECT_EQ(info->location, "EU");
  EXPECT_TRUE(ValueOrDie(created->CreateStreamJob(kKey, "full_refresh", std::nullopt, "")).id !=
              "");
  EXPECT_TRUE(created->client().DeleteDataset(harness_->project(), dataset, true).ok());
}

TEST_F(BigQueryBackendTest, IdentifiersAndKeysAreCheckedBeforeAnyRequest) {
  auto project = BigQueryBackend::Open({.project = "p`; DROP", .dataset = "d"});
  ASSERT_FALSE(project);
  EXPECT_EQ(project.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(project.error().message().find("engine.backend.config.database"), std::string::npos);
  auto dataset = BigQueryBackend::Open({.project = "p", .dataset = "a.b"});
  ASSERT_FALSE(dataset);
  EXPECT_NE(dataset.error().message().find("engine.backend.config.schema"), std::string::npos);

  // Outside the emulator the key is read: a broken one names where it came from, not its text.
  auto key = BigQueryBackend::Open(
      {.project = "p",
       .dataset = "d",
       .service_account_key = R"({"type":"service_account","private_key":"SECRET-PEM"})",
       .client = {.env = [](const std::string&) { return std::optional<std::string>(); }}});
  ASSERT_FALSE(key);
  EXPECT_EQ(key.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(key.error().message().find("engine.backend.config.service_account_key"),
            std::string::npos)
      << key.error().message();
  EXPECT_EQ(key.error().message().find("SECRET-PEM"), std::string::npos);
}

TEST_F(BigQueryBackendTest, TheRunLockAdmitsOneRunAndIsReleasedAtTheEnd) {
  auto first = Reopen();
  ASSERT_TRUE(first->AcquireRunLock(kKey).ok());
  ASSERT_TRUE(first->AcquireRunLock(kKey).ok());  // Held already: fine.
  auto second = Reopen();
  Status refused = second->AcquireRunLock(kKey);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.failure_class(), FailureClass::kBackend);
  EXPECT_NE(refused.message().find("another run of pipeline 'pipeline' (dummy.creatures)"),
            std::string::npos)
      << refused.message();
  EXPECT_NE(refused.message().find(std::to_string(getpid()) + "@"), std::string::npos);
  EXPECT_TRUE(second->AcquireRunLock(kOtherKey).ok());  // Another stream: its own lock.

  first.reset();  // Released.
  EXPECT_EQ(harness_->QueryText("SELECT COUNT(*) FROM " + LockTable() +
                                " WHERE stream_name = 'creatures' AND token IS NULL"),
            "1");
  EXPECT_TRUE(second->AcquireRunLock(kKey).ok());
}

TEST_F(BigQueryBackendTest, ALockLeftByAGoneRunIsTakenOver) {
  auto first = Reopen();
  ASSERT_TRUE(first->AcquireRunLock(kKey).ok());
  // A holder on another host that renewed a moment ago: alive as far as anyone can tell.
  harness_->ExecuteRaw(
      "UPDATE " + LockTable() +
      " SET owner = '1@another-host', token = 'theirs', heartbeat_at = DATETIME '" +
      FormatSqlTimestamp(NowMicros()) + "' WHERE stream_name = 'creatures'");
  auto second = Reopen();
  Status refused = second->AcquireRunLock(kKey);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("1@another-host"), std::string::npos) << refused.message();

  // Its lease ran out: it is gone.
  harness_->ExecuteRaw("UPDATE " + LockTable() +
                       " SET heartbeat_at = DATETIME '2020-01-01 00:00:00' WHERE stream_name ="
                       " 'creatures'");
  ASSERT_TRUE(second->AcquireRunLock(kKey).ok());

  // A process of this host that no longer exists (a killed run) is gone at once.
  auto third = Reopen();
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  harness_->ExecuteRaw("UPDATE " + LockTable() + " SET owner = '999999999@" + host +
                       "', heartbeat_at = DATETIME '" + FormatSqlTimestamp(NowMicros()) +
                       "' WHERE stream_name = 'creatures'");
  EXPECT_TRUE(third->AcquireRunLock(kKey).ok());
}

TEST_F(BigQueryBackendTest, TheHeartbeatRenewsTheLeaseAndNoticesALostLock) {
  auto holder = Reopen(/*heartbeat_s=*/0.2);
  ASSERT_TRUE(holder->AcquireRunLock(kKey).ok());
  StreamJob job = ValueOrDie(holder->CreateStreamJob(kKey, "full_refresh", std::nullopt, ""));
  harness_->ExecuteRaw("UPDATE " + LockTable() +
                       " SET heartbeat_at = DATETIME '2020-01-01 00:00:00' WHERE stream_name ="
                       " 'creatures'");
  std::optional<std::string> renewed;
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    renewed = harness_->QueryText("SELECT FORMAT_DATETIME('%Y', heartbeat_at) FROM " + LockTable() +
                                  " WHERE stream_name = 'creatures'");
    if (renewed != "2020" || renewed == std::nullopt) break;
  }
  EXPECT_NE(renewed, "2020") << "the heartbeat did not renew the lease";

  // Someone took it (an operator, a run that thought this one gone): the next write refuses.
  harness_->ExecuteRaw("UPDATE " + LockTable() +
                       " SET token = 'someone-else' WHERE stream_name = 'creatures'");
  Status refused;
  for (int i = 0; i < 50 && refused.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    refused = holder->UpdateStreamJobStatus(job.id, JobStatus::kRunning, std::nullopt);
  }
  EXPECT_EQ(refused.code(), StatusCode::kAborted);
  EXPECT_NE(refused.message().find("lost the BigQuery run lock"), std::string::npos);
}

Value ParsedConfig(std::string_view json) {
  auto parsed = Value::FromJson(json);
  EXPECT_TRUE(parsed) << json;
  return parsed ? *parsed : Value();
}

TEST(BackendConfigOfTest, ASharedDatasetInheritsTheDestinationsLocation) {
  constexpr std::string_view kShared =
      R"({"destination": {"name": "bigquery", "config": {"project_id": "p", "dataset_id": "d",)"
      R"( "dataset_location": "EU", "create_dataset": true}},)"
      R"( "engine": {"backend": {"type": "bigquery", "config": {"database": "p", "schema": "d",)"
      R"( "create_schema": true}}}})";
  Value shared = BackendConfigOf(ParsedConfig(kShared));
  EXPECT_EQ(shared.FindPath("config.schema_location")->AsString(), "EU");

  // Anything else keeps the backend block as written.
  for (std::string_view other :
       {R"({"destination": {"name": "bigquery", "config": {"project_id": "p", "dataset_id":)"
        R"( "other", "dataset_location": "EU", "create_dataset": true}}, "engine": {"backend":)"
        R"( {"type": "bigquery", "config": {"database": "p", "schema": "d", "create_schema":)"
        R"( true}}}})",
        R"({"destination": {"name": "bigquery", "config": {"project_id": "p", "dataset_id":)"
        R"( "d", "dataset_location": "EU", "create_dataset": false}}, "engine": {"backend":)"
        R"( {"type": "bigquery", "config": {"database": "p", "schema": "d", "create_schema":)"
        R"( true}}}})",
        R"({"destination": {"name": "bigquery", "config": {"project_id": "p", "dataset_id":)"
        R"( "d", "dataset_location": "EU", "create_dataset": true}}, "engine": {"backend":)"
        R"( {"type": "bigquery", "config": {"database": "p", "schema": "d", "create_schema":)"
        R"( true, "schema_location": "US"}}}})",
        R"({"destination": {"name": "file", "config": {}}, "engine": {"backend": {"type":)"
        R"( "sqlite", "config": {"database": "x", "schema": "y"}}}})"}) {
    Value config = ParsedConfig(other);
    EXPECT_EQ(BackendConfigOf(config).ToJson(), config.FindPath("engine.backend")->ToJson())
        << other;
  }
}

}  // namespace
}  // namespace bizon
