#include "connectors/destinations/parquet/parquet_part_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "duckdb/duckdb_client.h"

namespace bizon {
namespace {

class ParquetPartWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("bizon-parquet-" + std::to_string(::getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(directory_);
    std::filesystem::create_directories(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  std::string PathOf(std::string_view name) const { return (directory_ / name).string(); }

  /// Rows of `sql`, where `{}` is the quoted path of the part file.
  static DuckRows Read(const std::string& sql) {
    auto database = DuckDatabase::Open("", FailureClass::kDestination);
    EXPECT_TRUE(database.has_value());
    auto connection = DuckConnection::Connect(*database);
    EXPECT_TRUE(connection.has_value());
    auto rows = connection->Query(sql);
    EXPECT_TRUE(rows.has_value()) << rows.error().message();
    return rows.has_value() ? *rows : DuckRows{};
  }

  std::filesystem::path directory_;
};

TEST_F(ParquetPartWriterTest, WritesDestinationRecordsAsTypedColumns) {
  auto writer = ParquetPartWriter::Make(std::nullopt, ParquetCompression::kZstd);
  ASSERT_TRUE(writer.has_value()) << writer.error().message();
  RecordBatch batch;
  batch.Add("a", R"({"x":1})", 1'700'000'000'000'000);
  batch.Add("b\"q", R"({"y":"two"})", 1'700'000'001'500'000);
  for (size_t i = 0; i < batch.size(); ++i) {
    ASSERT_TRUE((*writer)->AppendRecord(batch, i, 1'800'000'000'000'000).ok());
  }
  EXPECT_EQ((*writer)->rows(), 2);
  std::string path = PathOf("a.parquet");
  ASSERT_TRUE((*writer)->WritePart(path).ok());
  EXPECT_EQ((*writer)->rows(), 0);

  DuckRows rows = Read(
      "SELECT length(bizon_id), source_record_id, epoch_us(source_timestamp), "
      "epoch_us(bizon_loaded_at), source_data, typeof(source_timestamp) FROM read_parquet(" +
      DuckQuoteLiteral(path) + ")");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][0], "32");
  EXPECT_EQ(rows[0][1], "a");
  EXPECT_EQ(rows[0][2], "1700000000000000");
  EXPECT_EQ(rows[0][3], "1800000000000000");
  EXPECT_EQ(rows[0][4], R"({"x":1})");
  EXPECT_EQ(rows[0][5], "TIMESTAMP WITH TIME ZONE");
  EXPECT_EQ(rows[1][1], "b\"q");
  EXPECT_EQ(rows[1][2], "1700000001500000");

  DuckRows codec = Read("SELECT DISTINCT compression, row_group_id FROM parquet_metadata(" +
                        DuckQuoteLiteral(path) + ")");
  ASSERT_EQ(codec.size(), 1u);
  EXPECT_EQ(codec[0][0], "ZSTD");
  EXPECT_EQ(codec[0][1], "0");
}

TEST_F(ParquetPartWriterTest, PartsHoldOnlyTheirOwnRowsAndSnappyIsHonoured) {
  auto writer = ParquetPartWriter::Make(std::nullopt, ParquetCompression::kSnappy);
  ASSERT_TRUE(writer.has_value());
  RecordBatch batch;
  for (int i = 0; i < 5; ++i) batch.Add(std::to_string(i), "{}", 0);
  for (size_t i = 0; i < 3; ++i) ASSERT_TRUE((*writer)->AppendRecord(batch, i, 0).ok());
  ASSERT_TRUE((*writer)->WritePart(PathOf("1.parquet")).ok());
  ASSERT_TRUE((*writer)->AppendRecord(batch, 3, 0).ok());
  ASSERT_TRUE((*writer)->Discard().ok());
  ASSERT_TRUE((*writer)->AppendRecord(batch, 4, 0).ok());
  ASSERT_TRUE((*writer)->WritePart(PathOf("2.parquet")).ok());

  DuckRows first = Read("SELECT string_agg(source_record_id, ',') FROM read_parquet(" +
                        DuckQuoteLiteral(PathOf("1.parquet")) + ")");
  EXPECT_EQ(first[0][0], "0,1,2");
  DuckRows second = Read("SELECT string_agg(source_record_id, ',') FROM read_parquet(" +
                         DuckQuoteLiteral(PathOf("2.parquet")) + ")");
  EXPECT_EQ(second[0][0], "4");
  DuckRows codec = Read("SELECT DISTINCT compression FROM parquet_metadata(" +
                        DuckQuoteLiteral(PathOf("2.parquet")) + ")");
  ASSERT_EQ(codec.size(), 1u);
  EXPECT_EQ(codec[0][0], "SNAPPY");
}

TEST_F(ParquetPartWriterTest, UnnestFillsTypedColumnsFromThePayload) {
  std::vector<ParquetColumn> columns = {
      {"name", ParquetColumnType::kText},    {"n", ParquetColumnType::kBigint},
      {"score", ParquetColumnType::kDouble}, {"ok", ParquetColumnType::kBoolean},
      {"at", ParquetColumnType::kTimestamp}, {"day", ParquetColumnType::kDate},
      {"extra", ParquetColumnType::kJson},   {"amount", ParquetColumnType::kNumeric}};
  auto writer = ParquetPartWriter::Make(columns, ParquetCompression::kZstd);
  ASSERT_TRUE(writer.has_value()) << writer.error().message();
  ASSERT_TRUE((*writer)
                  ->AppendUnnested(R"({"name":"x","n":7,"score":1.5,"ok":true,)"
                                   R"("at":"2024-01-02T03:04:05Z","day":"2024-01-02",)"
                                   R"("extra":{"a":[1,2]},"amount":12.25})",
                                   "r1")
                  .ok());
  ASSERT_TRUE((*writer)
                  ->AppendUnnested(R"({"name":null,"n":null,"score":2,"ok":false,"at":null,)"
                                   R"("day":null,"extra":"s","amount":"3"})",
                                   "r2")
                  .ok());
  std::string path = PathOf("u.parquet");
  ASSERT_TRUE((*writer)->WritePart(path).ok());
  DuckRows rows = Read(
      "SELECT name, n, score, ok, epoch_us(\"at\"), day, extra, amount, typeof(n), typeof(day) "
      "FROM read_parquet(" +
      DuckQuoteLiteral(path) + ")");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][0], "x");
  EXPECT_EQ(rows[0][1], "7");
  EXPECT_EQ(rows[0][2], "1.5");
  EXPECT_EQ(rows[0][3], "true");
  EXPECT_EQ(rows[0][4], "1704164645000000");
  EXPECT_EQ(rows[0][5], "2024-01-02");
  EXPECT_EQ(rows[0][6], R"({"a":[1,2]})");
  EXPECT_EQ(rows[0][7], "12.250000000");
  EXPECT_EQ(rows[0][8], "BIGINT");
  EXPECT_EQ(rows[0][9], "DATE");
  EXPECT_EQ(rows[1][0], std::nullopt);
  EXPECT_EQ(rows[1][2], "2.0");
  EXPECT_EQ(rows[1][6], R"("s")");
  EXPECT_EQ(rows[1][7], "3.000000000");
}

TEST_F(ParquetPartWriterTest, RefusesAValueItsColumnCannotHoldNamingTheRecord) {
  auto writer = ParquetPartWriter::Make(
      std::vector<ParquetColumn>{{"n", ParquetColumnType::kBigint}}, ParquetCompression::kZstd);
  ASSERT_TRUE(writer.has_value());
  Status refused = (*writer)->AppendUnnested(R"({"n":{"a":1}})", "rec-9");
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("rec-9"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("'n'"), std::string::npos) << refused.message();

  Status missing = (*writer)->AppendUnnested(R"({"m":1})", "rec-10");
  EXPECT_NE(missing.message().find("no key 'n'"), std::string::npos) << missing.message();
  Status cast = (*writer)->AppendUnnested(R"({"n":"seven"})", "rec-11");
  EXPECT_FALSE(cast.ok());
  EXPECT_NE(cast.message().find("rec-11"), std::string::npos) << cast.message();

  ASSERT_TRUE((*writer)->Discard().ok());
  ASSERT_TRUE((*writer)->AppendUnnested(R"({"n":"42"})", "rec-12").ok());
  std::string path = PathOf("n.parquet");
  ASSERT_TRUE((*writer)->WritePart(path).ok());
  DuckRows rows = Read("SELECT n FROM read_parquet(" + DuckQuoteLiteral(path) + ")");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], "42");
}

TEST_F(ParquetPartWriterTest, SchemaTypesAreCheckedWithTheirPath) {
  auto config =
      Value::FromJson(R"({"record_schemas":[{"destination_id":"t","record_schema":[)"
                      R"({"name":"a","type":"STRING"},{"name":"b","type":"GEOGRAPHY"}]}]})");
  ASSERT_TRUE(config.has_value());
  std::vector<ConfigRuleViolation> violations = CheckParquetSchemas(*config);
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].path, "record_schemas[0].record_schema[1].type");
  EXPECT_NE(violations[0].message.find("GEOGRAPHY"), std::string::npos);
  auto schemas = ReadParquetSchemas(*config);
  ASSERT_FALSE(schemas.has_value());
  EXPECT_EQ(schemas.error().failure_class(), FailureClass::kConfig);
}

// With DuckDB built (this file is), Parquet output is checked as its schemas; a build without it
// refuses `format` instead (tests/minimal/test_minimal_build.sh).
TEST_F(ParquetPartWriterTest, ParquetOutputIsCheckedAsItsSchemasWhenDuckdbIsBuilt) {
  auto config = Value::FromJson(R"({"record_schemas":[{"destination_id":"t","record_schema":[)"
                                R"({"name":"b","type":"GEOGRAPHY"}]}]})");
  ASSERT_TRUE(config.has_value());
  std::vector<ConfigRuleViolation> violations = CheckParquetOutput(*config);
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].path, "record_schemas[0].record_schema[0].type");
  EXPECT_TRUE(CheckParquetOutput(Value::EmptyMap()).empty());
}

}  // namespace
}  // namespace bizon
