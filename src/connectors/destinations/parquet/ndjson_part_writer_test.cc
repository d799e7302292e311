#include "connectors/destinations/parquet/ndjson_part_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace bizon {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string TempPath(std::string_view name) {
  return (std::filesystem::temp_directory_path() /
          ("bizon-ndjson-" + std::to_string(::getpid()) + "-" + std::string(name)))
      .string();
}

TEST(NdjsonPartWriterTest, WritesDestinationRecordsAsTheFileDestinationRendersThem) {
  NdjsonPartWriter writer(std::nullopt);
  RecordBatch batch;
  batch.Add("a", R"({"x":1})", 1'700'000'000'000'000);
  batch.Add("b", R"({"y":"two"})", 1'700'000'001'500'000);
  for (size_t i = 0; i < batch.size(); ++i) ASSERT_TRUE(writer.AppendRecord(batch, i, 0).ok());
  EXPECT_EQ(writer.rows(), 2);
  EXPECT_GT(writer.bytes(), 0);
  std::string path = TempPath("records.json");
  ASSERT_TRUE(writer.WritePart(path).ok());
  EXPECT_EQ(writer.rows(), 0);
  std::string text = ReadFile(path);
  std::filesystem::remove(path);
  size_t newline = text.find('\n');
  ASSERT_NE(newline, std::string::npos);
  auto first = Value::FromJson(text.substr(0, newline));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->GetString("source_record_id"), "a");
  EXPECT_EQ(first->GetString("source_data"), R"({"x":1})");
  EXPECT_EQ(first->GetString("source_timestamp"), "2023-11-14T22:13:20+00:00");
  EXPECT_EQ(first->GetString("bizon_id").size(), 32u);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
}

TEST(NdjsonPartWriterTest, UnnestKeepsTheSchemaKeysInOrderAndRefusesOthers) {
  NdjsonPartWriter writer(std::vector<std::string>{"b", "a"});
  ASSERT_TRUE(writer.AppendUnnested(R"({"a": [1, 2], "b": "x"})", "r1").ok());
  Status extra = writer.AppendUnnested(R"({"a":1,"b":2,"c":3})", "r2");
  EXPECT_NE(extra.message().find("record r2: 3 keys"), std::string::npos) << extra.message();
  Status missing = writer.AppendUnnested(R"({"a":1,"c":3})", "r3");
  EXPECT_NE(missing.message().find("no key 'b'"), std::string::npos) << missing.message();
  EXPECT_EQ(writer.rows(), 1);
  std::string path = TempPath("unnest.json");
  ASSERT_TRUE(writer.WritePart(path).ok());
  EXPECT_EQ(ReadFile(path), "{\"b\":\"x\",\"a\":[1,2]}\n");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace bizon
