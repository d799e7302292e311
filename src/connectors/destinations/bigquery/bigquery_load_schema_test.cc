// The load file: our OCF framing read back by avro-c's own file reader, the header schema kept
// verbatim (logicalType included), and the value conversions of each BigQuery type.
#include "connectors/destinations/bigquery/bigquery_load_schema.h"

#include <avro.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "connectors/destinations/bigquery/avro_ocf_writer.h"

namespace bizon {
namespace {

/// Writes `bytes` to a temporary file and opens it with avro-c's reader.
class ReadBack {
 public:
  explicit ReadBack(const std::string& bytes) {
    char pattern[] = "/tmp/bizon_avro_XXXXXX";
    int fd = ::mkstemp(pattern);
    path_ = pattern;
    EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ::close(fd);
    ok_ = avro_file_reader(path_.c_str(), &reader_) == 0;
  }
  ~ReadBack() {
    if (ok_) avro_file_reader_close(reader_);
    std::remove(path_.c_str());
  }
  bool ok() const { return ok_; }

  /// Every row, each field rendered by avro-c as JSON.
  std::vector<std::string> Rows() {
    std::vector<std::string> rows;
    avro_schema_t schema = avro_file_reader_get_writer_schema(reader_);
    avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
    avro_value_t value;
    avro_generic_value_new(iface, &value);
    while (avro_file_reader_read_value(reader_, &value) == 0) {
      char* json = nullptr;
      avro_value_to_json(&value, 1, &json);
      rows.emplace_back(json);
      free(json);  // NOLINT(cppcoreguidelines-no-malloc): avro-c allocates with malloc.
    }
    avro_value_decref(&value);
    avro_value_iface_decref(iface);
    avro_schema_decref(schema);
    return rows;
  }

 private:
  std::string path_;
  avro_file_reader_t reader_ = nullptr;
  bool ok_ = false;
};

/// The `avro.schema` entry of an OCF header, read with our own varint decoding.
std::string HeaderSchema(const std::string& file) {
  size_t pos = 4;
  auto read_long = [&]() {
    uint64_t value = 0;
    int shift = 0;
    while (pos < file.size()) {
      auto byte = static_cast<unsigned char>(file[pos++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      shift += 7;
      if ((byte & 0x80) == 0) break;
    }
    return static_cast<int64_t>((value >> 1) ^ (~(value & 1) + 1));
  };
  auto read_bytes = [&]() {
    auto length = static_cast<size_t>(read_long());
    std::string out = file.substr(pos, length);
    pos += length;
    return out;
  };
  int64_t entries = read_long();
  for (int64_t i = 0; i < entries; ++i) {
    std::string key = read_bytes();
    std::string value = read_bytes();
    if (key == "avro.schema") return value;
  }
  return "";
}

TEST(BigqueryLoadFileTest, RawRowsReadBackWithAvroCAndKeepTheLogicalTypes) {
  auto encoder = LoadFileEncoder::Make(BigqueryRawColumns(), false);
  ASSERT_TRUE(encoder) << encoder.error().message();
  RecordBatch batch;
  batch.Add("id-1", R"({"a":1})", 1704067200000000);
  batch.Add("id-2", R"({"b":"é"})", 1704067201500000);
  batch.SetExtractedAt(1704067300000000);
  for (size_t i = 0; i < batch.size(); ++i) {
    ASSERT_TRUE((*encoder)->Append(batch, i, 1704067400000000).ok());
  }
  EXPECT_EQ((*encoder)->rows(), 2);
  auto file = (*encoder)->Finish();
  ASSERT_TRUE(file);
  EXPECT_EQ(file->substr(0, 4), std::string("Obj\x01", 4));
  std::string schema = HeaderSchema(*file);
  EXPECT_NE(
      schema.find(
          R"("name":"_source_timestamp","type":["null",{"type":"long","logicalType":"timestamp-micros"}])"),
      std::string::npos)
      << schema;
  ReadBack reader(*file);
  ASSERT_TRUE(reader.ok()) << avro_strerror();
  std::vector<std::string> rows = reader.Rows();
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_NE(rows[0].find(R"("_source_record_id": {"string": "id-1"})"), std::string::npos)
      << rows[0];
  EXPECT_NE(rows[0].find(R"("_source_timestamp": {"long": 1704067200000000})"), std::string::npos)
      << rows[0];
  EXPECT_NE(rows[0].find(R"("_bizon_extracted_at": {"long": 1704067300000000})"),
            std::string::npos);
  EXPECT_NE(rows[1].find(R"("_bizon_loaded_at": {"long": 1704067400000000})"), std::string::npos);
  EXPECT_NE(rows[1].find(R"("_source_timestamp": {"long": 1704067201500000})"), std::string::npos);
  // The bizon id: 32 hex characters, a uuid4.
  size_t at = rows[1].find(R"("_bizon_id": {"string": ")");
  ASSERT_NE(at, std::string::npos);
  std::string id = rows[1].substr(at + 25, 32);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_EQ(id[12], '4');
}

TEST(BigqueryLoadFileTest, ManyBlocksReadBackInOrder) {
  auto writer =
      AvroOcfWriter::Make(R"({"type":"record","name":"r","fields":[{"name":"n","type":"long"}]})",
                          /*block_bytes=*/64);
  ASSERT_TRUE(writer);
  for (int i = 0; i < 1000; ++i) {
    auto field = (*writer)->Field(0);
    ASSERT_TRUE(field);
    avro_value_set_long(&*field, i * 1000003LL);
    ASSERT_TRUE((*writer)->AppendRow().ok());
  }
  auto file = (*writer)->Finish();
  ASSERT_TRUE(file);
  ReadBack reader(*file);
  ASSERT_TRUE(reader.ok()) << avro_strerror();
  std::vector<std::string> rows = reader.Rows();
  ASSERT_EQ(rows.size(), 1000U);
  EXPECT_EQ(rows[0], R"({"n": 0})");
  EXPECT_EQ(rows[999], R"({"n": 999002997})");
}

TEST(BigqueryLoadFileTest, EmptyFileHasAHeaderAndNoBlock) {
  auto writer =
      AvroOcfWriter::Make(R"({"type":"record","name":"r","fields":[{"name":"n","type":"long"}]})");
  ASSERT_TRUE(writer);
  auto file = (*writer)->Finish();
  ASSERT_TRUE(file);
  ReadBack reader(*file);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE(reader.Rows().empty());
}

TEST(BigqueryLoadFileTest, InvalidSchemaIsRefused) {
  auto writer = AvroOcfWriter::Make(R"({"type":"nope"})");
  ASSERT_FALSE(writer);
  EXPECT_EQ(writer.error().code(), StatusCode::kInvalidArgument);
}

Value Column(std::string name, std::string type, std::string mode = "NULLABLE") {
  return Value(
      Value::Map{{"name", std::move(name)}, {"type", std::move(type)}, {"mode", std::move(mode)}});
}

TEST(BigqueryLoadFileTest, UnnestedRowsTakeEachTypeInDeclaredOrder) {
  Value schema(Value::List{Column("id", "INTEGER", "REQUIRED"), Column("name", "STRING"),
                           Column("score", "FLOAT64"), Column("ok", "BOOLEAN"),
                           Column("at", "TIMESTAMP"), Column("day", "DATE"), Column("t", "TIME"),
                           Column("amount", "NUMERIC"), Column("doc", "JSON"),
                           Column("tags", "STRING", "REPEATED"), Column("dt", "DATETIME")});
  auto columns = ParseRecordSchema(schema, "record_schemas[0]");
  ASSERT_TRUE(columns) << columns.error().message();
  auto encoder = LoadFileEncoder::Make(*columns, true);
  ASSERT_TRUE(encoder);
  RecordBatch batch;
  // Keys in another order than declared; "score" absent.
  batch.Add("r1",
            R"({"name":"x","id":7,"ok":true,"at":"2024-01-01T01:00:00+01:00","day":"2024-03-01",)"
            R"("t":"12:30:00.5","amount":"-12.345","doc":{"k":[1,2]},"tags":["a","b"],)"
            R"("dt":"2024-01-02T03:04:05"})",
            0);
  ASSERT_TRUE((*encoder)->Append(batch, 0, 0).ok());
  auto file = (*encoder)->Finish();
  ASSERT_TRUE(file);
  std::string header = HeaderSchema(*file);
  EXPECT_NE(header.find(R"({"type":"int","logicalType":"date"})"), std::string::npos);
  EXPECT_NE(header.find(R"("logicalType":"decimal","precision":38,"scale":9)"), std::string::npos);
  EXPECT_NE(header.find(R"("sqlType":"JSON")"), std::string::npos);
  ReadBack reader(*file);
  ASSERT_TRUE(reader.ok()) << avro_strerror();
  std::vector<std::string> rows = reader.Rows();
  ASSERT_EQ(rows.size(), 1U);
  const std::string& row = rows[0];
  EXPECT_NE(row.find(R"("id": 7)"), std::string::npos) << row;
  EXPECT_NE(row.find(R"("name": {"string": "x"})"), std::string::npos) << row;
  EXPECT_NE(row.find(R"("score": null)"), std::string::npos) << row;
  EXPECT_NE(row.find(R"("ok": {"boolean": true})"), std::string::npos) << row;
  EXPECT_NE(row.find(R"("at": {"long": 1704067200000000})"), std::string::npos) << row;
  EXPECT_NE(row.find(R"("day": {"int": 19783})"), std::string::npos) << row;
  EXPECT_NE(row.find(R"("t": {"long": 45000500000})"), std::string::npos) << row;
  EXPECT_NE(row.find(R"("doc": {"string": "{\"k\":[1,2]}"})"), std::string::npos) << row;
  EXPECT_NE(row.find(R"("tags": ["a", "b"])"), std::string::npos) << row;
  EXPECT_NE(row.find(R"("dt": {"string": "2024-01-02T03:04:05"})"), std::string::npos) << row;
}

TEST(BigqueryLoadFileTest, UnnestRefusesUndeclaredKeysMissingRequiredAndBadValues) {
  Value schema(Value::List{Column("id", "INTEGER", "REQUIRED"), Column("day", "DATE")});
  auto columns = ParseRecordSchema(schema, "record_schemas[0]");
  ASSERT_TRUE(columns);
  auto encoder = LoadFileEncoder::Make(*columns, true);
  ASSERT_TRUE(encoder);
  RecordBatch batch;
  batch.Add("extra", R"({"id":1,"other":2})", 0);
  batch.Add("missing", R"({"day":"2024-01-01"})", 0);
  batch.Add("bad", R"({"id":1,"day":"2024-02-30"})", 0);
  batch.Add("text", R"({"id":"x"})", 0);
  Status extra = (*encoder)->Append(batch, 0, 0);
  EXPECT_NE(extra.message().find("Column other not found in BigQuery schema"), std::string::npos)
      << extra.message();
  Status missing = (*encoder)->Append(batch, 1, 0);
  EXPECT_NE(missing.message().find("record missing, column id (INTEGER)"), std::string::npos)
      << missing.message();
  Status bad = (*encoder)->Append(batch, 2, 0);
  EXPECT_NE(bad.message().find("'2024-02-30' is not a DATE"), std::string::npos) << bad.message();
  Status text = (*encoder)->Append(batch, 3, 0);
  EXPECT_EQ(text.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text.failure_class(), FailureClass::kDestination);
}

TEST(BigqueryLoadFileTest, RecordSchemaRefusesRecordUnknownTypesAndBadNames) {
  EXPECT_NE(ParseRecordSchema(Value(Value::List{Column("a", "RECORD")}), "e")
                .error()
                .message()
                .find("RECORD cannot be loaded"),
            std::string::npos);
  EXPECT_FALSE(ParseRecordSchema(Value(Value::List{Column("a", "WEEK")}), "e"));
  EXPECT_FALSE(ParseRecordSchema(Value(Value::List{Column("1a", "STRING")}), "e"));
  EXPECT_FALSE(
      ParseRecordSchema(Value(Value::List{Column("a", "STRING"), Column("a", "DATE")}), "e"));
  EXPECT_FALSE(ParseRecordSchema(Value(Value::List{}), "e"));
}

std::string Hex(const std::string& bytes) {
  std::string out;
  for (char c : bytes) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

TEST(BigqueryLoadFileTest, DecimalBytesAreScaledTwosComplement) {
  // 1.5 at scale 9 = 1500000000 = 0x59682f00.
  EXPECT_EQ(Hex(*DecimalBytes("1.5", 38, 9)), "59682f00");
  EXPECT_EQ(Hex(*DecimalBytes("-1.5", 38, 9)), "a697d100");
  EXPECT_EQ(Hex(*DecimalBytes("0", 38, 9)), "00");
  // 128 needs a sign byte; -128 does not.
  EXPECT_EQ(Hex(*DecimalBytes("128", 3, 0)), "0080");
  EXPECT_EQ(Hex(*DecimalBytes("-128", 3, 0)), "80");
  EXPECT_EQ(Hex(*DecimalBytes("1e2", 3, 0)), "64");
  // Rounded half away from zero past the scale.
  EXPECT_EQ(Hex(*DecimalBytes("0.0000000005", 38, 9)), "01");
  EXPECT_EQ(Hex(*DecimalBytes("-0.0000000005", 38, 9)), "ff");
  EXPECT_EQ(DecimalBytes("1e40", 38, 9).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DecimalBytes("1.2.3", 38, 9).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DecimalBytes("", 38, 9).error().code(), StatusCode::kInvalidArgument);
}

TEST(BigqueryLoadFileTest, TimestampDateAndTimeTexts) {
  EXPECT_EQ(*ParseBqTimestamp("1970-01-01"), 0);
  EXPECT_EQ(*ParseBqTimestamp("2024-01-01T00:00:00Z"), 1704067200000000);
  EXPECT_EQ(*ParseBqTimestamp("2024-01-01 00:00:00.123456 UTC"), 1704067200123456);
  EXPECT_EQ(*ParseBqTimestamp("2024-01-01T02:00:00+02:00"), 1704067200000000);
  EXPECT_EQ(*ParseBqTimestamp("2023-12-31T19:00-0500"), 1704067200000000);
  EXPECT_EQ(*ParseBqTimestamp("1969-12-31T23:59:59.5Z"), -500000);
  EXPECT_FALSE(ParseBqTimestamp("2024-13-01"));
  EXPECT_FALSE(ParseBqTimestamp("2024-01-01T25:00:00"));
  EXPECT_FALSE(ParseBqTimestamp("yesterday"));
  EXPECT_EQ(*ParseBqDate("2000-02-29"), 11016);
  EXPECT_FALSE(ParseBqDate("2001-02-29"));
  EXPECT_EQ(*ParseBqTime("23:59:59.999999"), 86399999999);
  EXPECT_FALSE(ParseBqTime("23:59"));
}

}  // namespace
}  // namespace bizon
