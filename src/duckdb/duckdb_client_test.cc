#include "duckdb/duckdb_client.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

namespace bizon {
namespace {

class DuckClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("bizon-duckdb-" + std::to_string(::getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(directory_);
    std::filesystem::create_directories(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  std::filesystem::path directory_;
};

DuckConnection Connect(const std::string& path) {
  auto database = DuckDatabase::Open(path, FailureClass::kDestination);
  EXPECT_TRUE(database.has_value()) << database.error().message();
  auto connection = DuckConnection::Connect(*database);
  EXPECT_TRUE(connection.has_value());
  return std::move(*connection);
}

TEST_F(DuckClientTest, AppendsTypedRowsAndQueriesThemAsText) {
  DuckConnection connection = Connect("");
  ASSERT_TRUE(connection
                  .Execute("CREATE TABLE t (s VARCHAR, i BIGINT, d DOUBLE, b BOOLEAN, "
                           "ts TIMESTAMP, day DATE)")
                  .ok());
  auto appender = DuckAppender::Open(connection, "", "t");
  ASSERT_TRUE(appender.has_value()) << appender.error().message();
  appender->Text("it's");
  appender->Int64(-7);
  appender->Double(2.5);
  appender->Bool(true);
  appender->TimestampMicros(1'700'000'000'123'456);
  appender->Date(19'000);
  ASSERT_TRUE(appender->EndRow().ok());
  for (int i = 0; i < 6; ++i) appender->Null();
  ASSERT_TRUE(appender->EndRow().ok());
  ASSERT_TRUE(appender->Close().ok());

  auto rows = connection.Query("SELECT * FROM t ORDER BY i NULLS LAST");
  ASSERT_TRUE(rows.has_value()) << rows.error().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0][0], "it's");
  EXPECT_EQ((*rows)[0][1], "-7");
  EXPECT_EQ((*rows)[0][2], "2.5");
  EXPECT_EQ((*rows)[0][3], "true");
  EXPECT_EQ((*rows)[0][4], "2023-11-14 22:13:20.123456");
  EXPECT_EQ((*rows)[0][5], "2022-01-08");
  for (const auto& value : (*rows)[1]) EXPECT_FALSE(value.has_value());
}

TEST_F(DuckClientTest, BindsParameters) {
  DuckConnection connection = Connect("");
  ASSERT_TRUE(
      connection.Execute("CREATE TABLE kv (k VARCHAR, v BIGINT, f DOUBLE, b BOOLEAN)").ok());
  ASSERT_TRUE(connection
                  .Execute("INSERT INTO kv VALUES ($1, $2, $3, $4)",
                           {std::string("a'); DROP TABLE kv; --"), int64_t{42}, 0.5, false})
                  .ok());
  ASSERT_TRUE(connection
                  .Execute("INSERT INTO kv VALUES ($1, $2, $3, $4)",
                           {std::string("b"), nullptr, nullptr, nullptr})
                  .ok());
  auto value = connection.QueryValue("SELECT v FROM kv WHERE k = $1",
                                     {std::string("a'); DROP TABLE kv; --")});
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value, "42");
  auto null_value = connection.QueryValue("SELECT v FROM kv WHERE k = 'b'");
  ASSERT_TRUE(null_value.has_value());
  EXPECT_FALSE(null_value->has_value());
  auto none = connection.QueryValue("SELECT v FROM kv WHERE k = 'zzz'");
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->has_value());
}

TEST_F(DuckClientTest, ClassifiesErrorsAndNamesTheFile) {
  std::string path = (directory_ / "errors.duckdb").string();
  DuckConnection connection = Connect(path);
  ASSERT_TRUE(connection.Execute("CREATE TABLE u (id BIGINT PRIMARY KEY)").ok());
  ASSERT_TRUE(connection.Execute("INSERT INTO u VALUES (1)").ok());
  Status duplicate = connection.Execute("INSERT INTO u VALUES (1)");
  EXPECT_EQ(duplicate.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(duplicate.failure_class(), FailureClass::kDestination);
  EXPECT_NE(duplicate.message().find(path), std::string::npos) << duplicate.message();
  Status missing = connection.Execute("SELECT * FROM nowhere");
  EXPECT_EQ(missing.code(), StatusCode::kFailedPrecondition);
  auto appender = DuckAppender::Open(connection, "", "nowhere");
  ASSERT_FALSE(appender.has_value());
  EXPECT_NE(appender.error().message().find("nowhere"), std::string::npos);
}

TEST_F(DuckClientTest, RefusedValueFailsItsRow) {
  DuckConnection connection = Connect("");
  ASSERT_TRUE(connection.Execute("CREATE TABLE n (i INTEGER NOT NULL)").ok());
  auto appender = DuckAppender::Open(connection, "", "n");
  ASSERT_TRUE(appender.has_value());
  appender->Text("not a number");
  Status refused = appender->EndRow();
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("not a number"), std::string::npos) << refused.message();
}

TEST_F(DuckClientTest, OneFileOneHandleAndTransactionsRollBack) {
  std::string path = (directory_ / "shared.duckdb").string();
  auto first = DuckDatabase::Open(path, FailureClass::kBackend);
  auto second = DuckDatabase::Open(path, FailureClass::kDestination);
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(first->get(), second->get());
  auto connection = DuckConnection::Connect(*first);
  ASSERT_TRUE(connection.has_value());
  ASSERT_TRUE(connection->Execute("CREATE TABLE r (i BIGINT)").ok());
  ASSERT_TRUE(connection->Begin().ok());
  ASSERT_TRUE(connection->Execute("INSERT INTO r VALUES (1)").ok());
  connection->RollbackQuietly();
  connection->RollbackQuietly();  // None open: harmless.
  auto count = connection->QueryValue("SELECT count(*) FROM r");
  ASSERT_TRUE(count.has_value());
  EXPECT_EQ(*count, "0");
}

TEST(DuckQuoteTest, DoublesQuotes) {
  EXPECT_EQ(DuckQuoteIdentifier("a\"b"), "\"a\"\"b\"");
  EXPECT_EQ(DuckQuoteLiteral("it's"), "'it''s'");
  EXPECT_EQ(DuckLibraryVersion(), "v1.5.6");
}

TEST_F(DuckClientTest, TwoSpellingsOfOnePathShareTheHandle) {
  std::string path = (directory_ / "same.duckdb").string();
  auto first = DuckDatabase::Open(path, FailureClass::kBackend);
  ASSERT_TRUE(first.has_value()) << first.error().message();
  std::string other = (directory_ / "." / "sub" / ".." / "same.duckdb").string();
  std::filesystem::create_directories(directory_ / "sub");
  auto second = DuckDatabase::Open(other, FailureClass::kDestination);
  ASSERT_TRUE(second.has_value()) << second.error().message();
  EXPECT_EQ(first->get(), second->get());
  // The handle was opened by a backend; a destination's connection reports its own failures.
  auto connection = DuckConnection::Connect(*second, FailureClass::kDestination);
  ASSERT_TRUE(connection.has_value());
  Status failed = connection->Execute("SELECT * FROM missing_table");
  EXPECT_EQ(failed.failure_class(), FailureClass::kDestination);
  auto default_class = DuckConnection::Connect(*second);
  ASSERT_TRUE(default_class.has_value());
  EXPECT_EQ(default_class->Execute("SELECT * FROM missing_table").failure_class(),
            FailureClass::kBackend);
}

TEST_F(DuckClientTest, AForkedChildNeverUsesItsParentsHandle) {
  std::string path = (directory_ / "forked.duckdb").string();
  auto parent = DuckDatabase::Open(path, FailureClass::kBackend);
  ASSERT_TRUE(parent.has_value()) << parent.error().message();
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The parent's handle is in this copy of its memory; Open() must not hand it out, and the
    // file itself is the parent's: a clear error naming it.
    auto opened = DuckDatabase::Open(path, FailureClass::kBackend);
    bool refused = !opened.has_value() && opened.error().code() == StatusCode::kUnavailable &&
                   opened.error().message().find(path) != std::string::npos;
    ::_exit(refused ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The parent's handle still works.
  auto connection = DuckConnection::Connect(*parent);
  ASSERT_TRUE(connection.has_value());
  EXPECT_TRUE(connection->Execute("CREATE TABLE t (i INTEGER)").ok());
}

}  // namespace
}  // namespace bizon
