#include "connectors/sources/kafka/avro_decoder.h"

#include <avro.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace bizon::kafka {
namespace {

/// Avro binary encoding helpers, written from the specification.
std::string Long(int64_t value) {
  uint64_t encoded = (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
  std::string out;
  while (encoded >= 0x80) {
    out.push_back(static_cast<char>((encoded & 0x7F) | 0x80));
    encoded >>= 7;
  }
  out.push_back(static_cast<char>(encoded));
  return out;
}
std::string Text(std::string_view text) {
  return Long(static_cast<int64_t>(text.size())) + std::string(text);
}
std::string Double(double value) {
  std::string out(8, '\0');
  std::memcpy(out.data(), &value, 8);
  return out;
}
std::string Float(float value) {
  std::string out(4, '\0');
  std::memcpy(out.data(), &value, 4);
  return out;
}

/// Decodes `data` with `schema`, expecting success when `succeeds`: the JSON then, else the error
/// message.
std::string DecodeExpecting(bool succeeds, std::string_view schema, const std::string& data) {
  auto decoder = AvroDecoder::Compile(schema);
  EXPECT_TRUE(decoder.has_value()) << decoder.error().message();
  if (!decoder) return "";
  std::string out;
  Status decoded = decoder->Decode(data, out);
  EXPECT_EQ(decoded.ok(), succeeds) << decoded.message() << " " << out;
  return decoded.ok() ? out : decoded.message();
}
std::string Decode(std::string_view schema, const std::string& data) {
  return DecodeExpecting(true, schema, data);
}
std::string DecodeError(std::string_view schema, const std::string& data) {
  return DecodeExpecting(false, schema, data);
}

TEST(AvroDecoderTest, DecodesPrimitives) {
  EXPECT_EQ(Decode(R"("null")", ""), "null");
  EXPECT_EQ(Decode(R"("boolean")", std::string(1, '\1')), "true");
  EXPECT_EQ(Decode(R"("boolean")", std::string(1, '\0')), "false");
  EXPECT_EQ(Decode(R"("int")", Long(-3)), "-3");
  EXPECT_EQ(Decode(R"("long")", Long(9007199254740993)), "9007199254740993");
  EXPECT_EQ(Decode(R"("long")", Long(INT64_MIN)), "-9223372036854775808");
  EXPECT_EQ(Decode(R"("double")", Double(0.1)), "0.1");
  EXPECT_EQ(Decode(R"("double")", Double(1e300 * 1e300)), "null");
  EXPECT_EQ(Decode(R"("float")", Float(0.5f)), "0.5");
  EXPECT_EQ(Decode(R"("string")", Text("h\xC3\xA9 \"q\"\n")), "\"h\xC3\xA9 \\\"q\\\"\\n\"");
  EXPECT_EQ(Decode(R"({"type": "string"})", Text("x")), "\"x\"");
  // Bytes map to code points U+0000-U+00FF.
  EXPECT_EQ(Decode(R"("bytes")", Text(std::string("\x00\x41\xFF", 3))), "\"\\u0000A\xC3\xBF\"");
}

TEST(AvroDecoderTest, DecodesComplexTypes) {
  constexpr std::string_view kSchema = R"({
    "type": "record", "name": "User", "namespace": "cdc",
    "fields": [
      {"name": "id", "type": "long"},
      {"name": "email", "type": ["null", "string"], "default": null},
      {"name": "role", "type": {"type": "enum", "name": "Role", "symbols": ["ADMIN", "USER"]}},
      {"name": "tags", "type": {"type": "array", "items": "string"}},
      {"name": "scores", "type": {"type": "map", "values": "int"}},
      {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 2}},
      {"name": "manager", "type": ["null", "cdc.User"]},
      {"name": "second_role", "type": "Role"}
    ]})";
  std::string data = Long(7) + Long(1) + Text("a@b.c") + Long(1) +
                     // Two blocks: a plain one and one with a negative count and a byte size.
                     Long(1) + Text("x") + Long(-1) + Long(2) + Text("y") + Long(0) + Long(1) +
                     Text("k") + Long(5) + Long(0) +  // map
                     std::string("\x01\x02", 2) +
                     // manager: a nested User with nulls.
                     Long(1) + Long(8) + Long(0) + Long(0) + Long(0) + Long(0) +
                     std::string(2, '\0') + Long(0) + Long(0) + Long(0);
  EXPECT_EQ(Decode(kSchema, data),
            R"({"id":7,"email":"a@b.c","role":"USER","tags":["x","y"],"scores":{"k":5},)"
            R"("hash":"\u0001\u0002","manager":{"id":8,"email":null,"role":"ADMIN","tags":[],)"
            R"("scores":{},"hash":"\u0000\u0000","manager":null,"second_role":"ADMIN"},)"
            R"("second_role":"ADMIN"})");
}

TEST(AvroDecoderTest, DecodesLogicalTypes) {
  EXPECT_EQ(Decode(R"({"type": "long", "logicalType": "timestamp-millis"})", Long(1706702400123)),
            R"("2024-01-31T12:00:00.123000Z")");
  EXPECT_EQ(
      Decode(R"({"type": "long", "logicalType": "timestamp-micros"})", Long(1706702400123456)),
      R"("2024-01-31T12:00:00.123456Z")");
  EXPECT_EQ(
      Decode(R"({"type": "long", "logicalType": "local-timestamp-millis"})", Long(1706702400000)),
      R"("2024-01-31T12:00:00.000000")");
  EXPECT_EQ(Decode(R"({"type": "int", "logicalType": "date"})", Long(19753)), R"("2024-01-31")");
  EXPECT_EQ(Decode(R"({"type": "int", "logicalType": "date"})", Long(-1)), R"("1969-12-31")");
  EXPECT_EQ(Decode(R"({"type": "int", "logicalType": "time-millis"})", Long(45296789)),
            R"("12:34:56.789000")");
  EXPECT_EQ(Decode(R"({"type": "long", "logicalType": "time-micros"})", Long(1)),
            R"("00:00:00.000001")");
  EXPECT_EQ(Decode(R"({"type": "string", "logicalType": "uuid"})",
                   Text("3fa85f64-5717-4562-b3fc-2c963f66afa6")),
            R"("3fa85f64-5717-4562-b3fc-2c963f66afa6")");
  constexpr std::string_view kDecimal =
      R"({"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2})";
  EXPECT_EQ(Decode(kDecimal, Text(std::string("\x30\x39", 2))), R"("123.45")");   // 12345
  EXPECT_EQ(Decode(kDecimal, Text(std::string("\xCF\xC7", 2))), R"("-123.45")");  // -12345
  EXPECT_EQ(Decode(kDecimal, Text(std::string("\x05", 1))), R"("0.05")");
  EXPECT_EQ(Decode(kDecimal, Text("")), R"("0.00")");
  EXPECT_EQ(Decode(R"({"type": "fixed", "name": "D", "size": 3, "logicalType": "decimal",
                       "precision": 6, "scale": 0})",
                   std::string("\xFF\xFF\xFF", 3)),
            R"("-1")");
  // Twenty bytes: beyond 128-bit integers. 2^152 = 5708990770823839524233143877797980545530986496.
  std::string big(20, '\0');
  big[0] = '\x01';
  EXPECT_EQ(Decode(R"({"type": "bytes", "logicalType": "decimal", "precision": 60, "scale": 3})",
                   Text(big)),
            R"("5708990770823839524233143877797980545530986.496")");
  // A logical type on the wrong base type is ignored.
  EXPECT_EQ(Decode(R"({"type": "string", "logicalType": "date"})", Text("x")), R"("x")");
}

TEST(AvroDecoderTest, ReportsBadSchemasAndTruncatedData) {
  for (std::string_view schema :
       {R"("nope")", R"({"type": "record", "name": "R"})", R"([])", R"({"fields": []})",
        R"({"type": "enum", "name": "E", "symbols": []})", R"({"type": "array"})", "not json",
        R"({"type": "record", "name": "R", "fields": [{"name": "a", "type": "Missing"}]})"}) {
    auto decoder = AvroDecoder::Compile(schema);
    ASSERT_FALSE(decoder.has_value()) << schema;
    EXPECT_NE(decoder.error().message().find("invalid Avro schema"), std::string::npos);
  }
  auto decoder = AvroDecoder::Compile(
      R"({"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]})");
  ASSERT_TRUE(decoder.has_value());
  std::string out;
  Status truncated = decoder->Decode(Long(10) + "abc", out);
  EXPECT_FALSE(truncated.ok());
  EXPECT_NE(truncated.message().find("ends early"), std::string::npos);
  auto union_decoder = AvroDecoder::Compile(R"(["null", "int"])");
  ASSERT_TRUE(union_decoder.has_value());
  Status branch = union_decoder->Decode(Long(5), out);
  EXPECT_NE(branch.message().find("union branch 5 is out of range"), std::string::npos);
}

/// avro-c is the reference encoder: what it writes, the decoder reads back.
// Found by fuzz/fuzz_avro_decoder: items encoded in no bytes let a few bytes of data claim any
// number of them; decoding 2^40 nulls ran until memory or patience ran out.
TEST(AvroDecoderTest, ArraysOfItemsWithoutBytesAreBounded) {
  constexpr std::string_view kNulls = R"({"type": "array", "items": "null"})";
  std::string three_nulls = Long(3) + Long(0);
  EXPECT_EQ(Decode(kNulls, three_nulls), "[null,null,null]");
  EXPECT_NE(DecodeError(kNulls, Long(int64_t{1} << 40) + Long(0)).find("take no bytes"),
            std::string::npos);
  constexpr std::string_view kEmptyRecords =
      R"({"type": "array", "items": {"type": "record", "name": "E", "fields": []}})";
  EXPECT_NE(DecodeError(kEmptyRecords, Long(-(int64_t{1} << 40)) + Long(0) + Long(0))
                .find("take no bytes"),
            std::string::npos);
}

// Seen reading the code, reproduced by fuzz/fuzz_avro_decoder: a decimal is padded to its scale, so
// a schema's huge scale made every value a gigabytes allocation.
TEST(AvroDecoderTest, HugeDecimalScaleIsRefused) {
  auto decoder = AvroDecoder::Compile(
      R"({"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2000000000})");
  ASSERT_FALSE(decoder.has_value());
  EXPECT_NE(decoder.error().message().find("scale 2000000000 is above the 1000 digits"),
            std::string::npos)
      << decoder.error().message();
  EXPECT_EQ(Decode(R"({"type": "bytes", "logicalType": "decimal", "precision": 1000,
                       "scale": 1000})",
                   Text("\x01"))
                .size(),
            1000u + 4u);  // "0.000...1" with its quotes.
}

// Negating the smallest block count overflowed (UBSan: signed integer overflow).
TEST(AvroDecoderTest, SmallestBlockCountIsAnError) {
  EXPECT_NE(DecodeError(R"({"type": "array", "items": "long"})", Long(INT64_MIN))
                .find("block count -9223372036854775808 is out of range"),
            std::string::npos);
}

// Converting to microseconds overflowed (UBSan: signed integer overflow) for values no
// calendar holds.
TEST(AvroDecoderTest, LogicalValuesBeyondMicrosecondsAreErrors) {
  for (std::string_view schema : {R"({"type": "long", "logicalType": "timestamp-millis"})",
                                  R"({"type": "long", "logicalType": "local-timestamp-millis"})",
                                  R"({"type": "int", "logicalType": "time-millis"})",
                                  R"({"type": "int", "logicalType": "date"})"}) {
    EXPECT_NE(DecodeError(schema, Long(INT64_MAX)).find("out of range for its logical type"),
              std::string::npos)
        << schema;
  }
  EXPECT_EQ(Decode(R"({"type": "long", "logicalType": "timestamp-micros"})", Long(INT64_MAX)),
            R"("294247-01-10T04:00:54.775807Z")");
}

TEST(AvroDecoderTest, ReadsWhatAvroCWrites) {
  constexpr char kSchema[] = R"({
    "type": "record", "name": "Order", "fields": [
      {"name": "id", "type": "int"},
      {"name": "amount", "type": "double"},
      {"name": "note", "type": ["null", "string"]},
      {"name": "items", "type": {"type": "array", "items": "long"}},
      {"name": "attributes", "type": {"type": "map", "values": "string"}},
      {"name": "paid", "type": "boolean"}
    ]})";
  avro_schema_t schema = nullptr;
  ASSERT_EQ(avro_schema_from_json_length(kSchema, sizeof(kSchema) - 1, &schema), 0)
      << avro_strerror();
  avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
  avro_value_t order;
  ASSERT_EQ(avro_generic_value_new(iface, &order), 0);
  avro_value_t field;
  avro_value_t element;
  avro_value_get_by_name(&order, "id", &field, nullptr);
  avro_value_set_int(&field, -42);
  avro_value_get_by_name(&order, "amount", &field, nullptr);
  avro_value_set_double(&field, 12.5);
  avro_value_get_by_name(&order, "note", &field, nullptr);
  avro_value_set_branch(&field, 1, &element);
  avro_value_set_string(&element, "fragile");
  avro_value_get_by_name(&order, "items", &field, nullptr);
  for (int64_t item : {1, 300, -70000}) {
    avro_value_append(&field, &element, nullptr);
    avro_value_set_long(&element, item);
  }
  avro_value_get_by_name(&order, "attributes", &field, nullptr);
  avro_value_add(&field, "color", &element, nullptr, nullptr);
  avro_value_set_string(&element, "red");
  avro_value_get_by_name(&order, "paid", &field, nullptr);
  avro_value_set_boolean(&field, 1);

  char buffer[256];
  avro_writer_t writer = avro_writer_memory(buffer, sizeof(buffer));
  ASSERT_EQ(avro_value_write(writer, &order), 0) << avro_strerror();
  std::string encoded(buffer, static_cast<size_t>(avro_writer_tell(writer)));
  avro_writer_free(writer);
  avro_value_decref(&order);
  avro_value_iface_decref(iface);
  avro_schema_decref(schema);

  EXPECT_EQ(Decode(kSchema, encoded),
            R"({"id":-42,"amount":12.5,"note":"fragile","items":[1,300,-70000],)"
            R"("attributes":{"color":"red"},"paid":true})");
}

}  // namespace
}  // namespace bizon::kafka
