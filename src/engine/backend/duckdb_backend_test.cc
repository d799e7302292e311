// What only the duckdb backend has (the contract itself is in backend_conformance_test.cc): the
// run lock within the one process that holds the file, the factory, and state sharing its file
// with other users of the same DuckDB handle.
#include "engine/backend/duckdb_backend.h"

#include <gtest/gtest.h>

#include "engine/backend/backend_factory.h"
#include "engine/backend/backend_test_support.h"

namespace bizon {
namespace {

using testing_support::DuckdbHarness;
using testing_support::kKey;
using testing_support::kOtherKey;
using testing_support::ValueOrDie;

TEST(DuckdbBackendTest, TheRunLockIsHeldUntilTheInstanceGoes) {
  DuckdbHarness harness;
  ASSERT_OK(harness.backend().AcquireRunLock(kKey));
  EXPECT_TRUE(harness.backend().RunLockIsExclusive());
  {
    auto second = ValueOrDie(DuckdbBackend::Open(harness.path(), "main"));
    Status refused = second->AcquireRunLock(kKey);
    EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(refused.failure_class(), FailureClass::kBackend);
    EXPECT_NE(refused.message().find(harness.path()), std::string::npos) << refused.ToString();
    ASSERT_OK(second->AcquireRunLock(kOtherKey));  // Another stream's lock is its own.
  }
  harness.duckdb().reset();
  auto third = ValueOrDie(DuckdbBackend::Open(harness.path(), "main"));
  ASSERT_OK(third->AcquireRunLock(kKey));
}

TEST(DuckdbBackendTest, TheFactoryOpensTheNamedFileAndSharesItsHandle) {
  DuckdbHarness harness;
  Value config = ValueOrDie(Value::FromJson(R"({"type": "duckdb", "config": {"database": ")" +
                                            harness.path() + R"(", "schema": "s"}})"));
  EXPECT_TRUE(IsProcessLocal(config));
  EXPECT_EQ(DescribeBackend(config), "duckdb file " + harness.path());
  std::unique_ptr<Backend> backend = ValueOrDie(OpenBackend(config));
  StreamJob job = ValueOrDie(backend->CreateStreamJob(kKey, "stream", std::nullopt, "1@host"));
  // The harness's connection reads it through the same handle: one file, one process.
  EXPECT_EQ(harness.QueryText("SELECT id FROM s.stream_jobs"), job.id);
  EXPECT_EQ(harness.QueryText("SELECT version FROM s.bizon_schema_version"), "1");
}

TEST(DuckdbBackendTest, AMissingPathIsRefused) {
  EXPECT_FALSE(DuckdbBackend::Open("", "main").has_value());
  EXPECT_FALSE(DuckdbBackend::Open(":memory:", "main").has_value());
}

}  // namespace
}  // namespace bizon
