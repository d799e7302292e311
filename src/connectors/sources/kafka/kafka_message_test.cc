#include "connectors/sources/kafka/kafka_message.h"

#include <gtest/gtest.h>

#include <string>

#include "bizon/value.h"

namespace bizon::kafka {
namespace {

std::string Bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

TEST(SchemaHeaderTest, ReadsAConfluentFourByteId) {
  auto header = ParseSchemaHeader(Bytes({0, 0, 0, 1, 2, 42}));
  ASSERT_TRUE(header.has_value()) << header.error().message();
  EXPECT_EQ(header->schema_id, 258);
  EXPECT_EQ(header->length, 5u);
}

TEST(SchemaHeaderTest, ReadsAnApicurioEightByteGlobalId) {
  auto header = ParseSchemaHeader(Bytes({0, 0, 0, 0, 0, 0, 0, 1, 7, 99}));
  ASSERT_TRUE(header.has_value()) << header.error().message();
  EXPECT_EQ(header->schema_id, 263);
  EXPECT_EQ(header->length, 9u);
  // Exactly nine bytes: a header and an empty body.
  auto bare = ParseSchemaHeader(Bytes({0, 0, 0, 0, 0, 0, 1, 0, 0}));
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->schema_id, 65536);
}

TEST(SchemaHeaderTest, RejectsShortValues) {
  auto empty = ParseSchemaHeader("");
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message().find("Missing schema id"), std::string::npos);
  auto four = ParseSchemaHeader(Bytes({0, 0, 0, 1}));
  ASSERT_FALSE(four.has_value());
  EXPECT_NE(four.error().message().find("4 bytes"), std::string::npos);
  // The 4-byte id is 0 but the 8-byte one does not fit.
  auto truncated = ParseSchemaHeader(Bytes({0, 0, 0, 0, 0, 1, 2}));
  ASSERT_FALSE(truncated.has_value());
  EXPECT_NE(truncated.error().message().find("8-byte global id"), std::string::npos);
}

TEST(SchemaHeaderTest, RejectsABadMagicByte) {
  auto header = ParseSchemaHeader(Bytes({1, 0, 0, 0, 1, 2}));
  ASSERT_FALSE(header.has_value());
  EXPECT_NE(header.error().message().find("Unexpected magic byte 1"), std::string::npos);
  EXPECT_NE(header.error().message().find("Schema Registry serializer"), std::string::npos);
  auto json = ParseSchemaHeader(R"({"a": 1})");
  ASSERT_FALSE(json.has_value());
  EXPECT_NE(json.error().message().find("magic byte 123"), std::string::npos);
}

TEST(JsonCheckTest, AcceptsJsonAndRejectsTheRest) {
  for (std::string_view text :
       {R"({"a":1,"b":[true,false,null,-0.5e+3,"x\"\\\/\b\f\n\r\t\u00e9"],"c":{}})", " [] ",
        "\"\xC3\xA9\"", "0", "-12", "1.5E-2", R"("\ud83d\ude00")"}) {
    EXPECT_TRUE(CheckJson(text).ok()) << text;
  }
  for (std::string_view text : {"", "{", "[1,]", "{\"a\"}", "01", "1.", "tru", "\"abc", "{} {}",
                                "'a'", "{a:1}", "[1 2]", "\"\\x\"", "-", "1e"}) {
    JsonCheck check = CheckJson(text);
    EXPECT_EQ(check.problem, JsonProblem::kSyntax) << text;
  }
  EXPECT_EQ(CheckJson(R"("\ud800")").problem, JsonProblem::kLoneSurrogate);
  EXPECT_EQ(CheckJson(R"("\udc00\ud800")").problem, JsonProblem::kLoneSurrogate);
  EXPECT_EQ(CheckJson("\"a\x01\"").problem, JsonProblem::kControlCharacter);
  EXPECT_EQ(CheckJson("\"a\tb\"").problem, JsonProblem::kControlCharacter);
  EXPECT_EQ(CheckJson("\"a\x01\"").offset, 2u);
  EXPECT_EQ(CheckJson(std::string(600, '[') + std::string(600, ']')).problem, JsonProblem::kSyntax);
}

TEST(Utf8Test, ValidatesAndRepairs) {
  EXPECT_TRUE(IsValidUtf8("plain ascii text longer than eight bytes"));
  EXPECT_TRUE(IsValidUtf8("\xC3\xA9t\xC3\xA9 \xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("abcdefgh\xFF"));
  EXPECT_FALSE(IsValidUtf8("\xC3"));          // Truncated.
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));  // An encoded surrogate.
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));      // Overlong.
  EXPECT_EQ(RepairUtf8("a\xFF"
                       "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(RepairUtf8("\xC3\xA9"), "\xC3\xA9");
}

TEST(JsonRepairTest, ReplacesOnlyLoneSurrogates) {
  EXPECT_EQ(ReplaceLoneSurrogates(R"({"a":"x\ud800y"})"), R"({"a":"x\ufffdy"})");
  EXPECT_EQ(ReplaceLoneSurrogates(R"("\udfff")"), R"("\ufffd")");
  // A valid pair is kept, a high surrogate followed by a non-surrogate is replaced.
  EXPECT_EQ(ReplaceLoneSurrogates(R"("\ud83d\ude00 \ud83d\u0041")"),
            R"("\ud83d\ude00 \ufffd\u0041")");
  // An escaped backslash before "u" is not an escape.
  EXPECT_EQ(ReplaceLoneSurrogates(R"("\\ud800")"), R"("\\ud800")");
}

TEST(JsonRepairTest, StripsControlCharactersButTabAndNewlines) {
  EXPECT_EQ(StripControlCharacters("a\x01\x1F"
                                   "b\tc\nd\re"),
            "ab\tc\nd\re");
}

TEST(DecodeJsonValueTest, RepairsWhatTheOriginalRepairs) {
  auto plain = DecodeJsonValue(R"({"id": 1})");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->json(), R"({"id": 1})");
  EXPECT_FALSE(plain->repaired.has_value());

  auto surrogate = DecodeJsonValue(R"({"name":"a\udc80b","ok":"\ud83d\ude00"})");
  ASSERT_TRUE(surrogate.has_value()) << surrogate.error().message();
  EXPECT_EQ(surrogate->json(), R"({"name":"a\ufffdb","ok":"\ud83d\ude00"})");

  auto control = DecodeJsonValue(
      "{\"name\":\"a\x02"
      "b\"}");
  ASSERT_TRUE(control.has_value()) << control.error().message();
  EXPECT_EQ(control->json(), R"({"name":"ab"})");

  auto invalid_utf8 = DecodeJsonValue("{\"name\":\"a\xFF\"}");
  ASSERT_TRUE(invalid_utf8.has_value());
  EXPECT_TRUE(invalid_utf8->replaced_invalid_utf8);
  EXPECT_EQ(invalid_utf8->json(), "{\"name\":\"a\xEF\xBF\xBD\"}");

  // Both repairs in one message.
  auto both = DecodeJsonValue("{\"a\":\"\\ud800\x01\"}");
  ASSERT_TRUE(both.has_value()) << both.error().message();
  EXPECT_EQ(both->json(), R"({"a":"\ufffd"})");
}

TEST(DecodeJsonValueTest, FailsWhenRepairsDoNotHelp) {
  auto syntax = DecodeJsonValue("{not json");
  ASSERT_FALSE(syntax.has_value());
  EXPECT_NE(syntax.error().message().find("invalid JSON at byte 1"), std::string::npos);
  // A raw tab inside a string stays after the repair: still an error, as in the original.
  auto tab = DecodeJsonValue("{\"a\":\"x\ty\"}");
  ASSERT_FALSE(tab.has_value());
  EXPECT_NE(tab.error().message().find("control character"), std::string::npos);
  EXPECT_EQ(tab.error().message().find("x\ty"), std::string::npos) << "no content in errors";
}

TEST(DecodeJsonKeyTest, AcceptsJsonKeysOnly) {
  auto key = DecodeJsonKey(R"({"id": 7})");
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(*key, R"({"id": 7})");
  EXPECT_TRUE(DecodeJsonKey("42").has_value());
  auto text = DecodeJsonKey("user-7");
  ASSERT_FALSE(text.has_value());
  EXPECT_NE(text.error().message().find("the key is not JSON"), std::string::npos);
  auto binary = DecodeJsonKey("\xFF\xFE");
  ASSERT_FALSE(binary.has_value());
  EXPECT_NE(binary.error().message().find("not valid UTF-8"), std::string::npos);
  // Keys get no surrogate repair.
  EXPECT_FALSE(DecodeJsonKey(R"("\ud800")").has_value());
}

TEST(RecordJsonTest, WritesTheFieldsInTheOriginalsOrder) {
  RecordParts parts{.topic = "cdc.users",
                    .offset = 12,
                    .partition = 3,
                    .timestamp_ms = 1700000000123,
                    .keys_json = R"({"id":7})",
                    .headers = {{"trace", "abc"}, {"bin", "\xFF"}, {"none", std::nullopt}},
                    .value_json = R"({"name":"x"})",
                    .schema_json = "{}"};
  std::string out;
  AppendRecordJson(out, parts);
  EXPECT_EQ(out,
            "{\"topic\":\"cdc.users\",\"offset\":12,\"partition\":3,\"timestamp\":1700000000123,"
            "\"keys\":{\"id\":7},\"headers\":{\"trace\":\"abc\",\"bin\":\"\xEF\xBF\xBD\","
            "\"none\":null},\"value\":{\"name\":\"x\"},\"schema\":{}}");
  auto parsed = Value::FromJson(out);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(RecordId(3, 12), "partition_3_offset_12");
}

}  // namespace
}  // namespace bizon::kafka
