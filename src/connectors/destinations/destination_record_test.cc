#include "connectors/destinations/destination_record.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>

#include "bizon/clock.h"
#include "bizon/value.h"

namespace bizon {
namespace {

std::string Rfc3339(int64_t micros) {
  std::string out;
  AppendRfc3339(out, micros);
  return out;
}

TEST(AppendRfc3339Test, FormatsUtcWithOptionalMicroseconds) {
  EXPECT_EQ(Rfc3339(0), "1970-01-01T00:00:00+00:00");
  EXPECT_EQ(Rfc3339(1'706'702'400'123'456), "2024-01-31T12:00:00.123456+00:00");
  EXPECT_EQ(Rfc3339(1'706'702'400'000'001), "2024-01-31T12:00:00.000001+00:00");
  // The cached second must not leak into the next one, nor back into an earlier one.
  EXPECT_EQ(Rfc3339(1'706'702'401'000'000), "2024-01-31T12:00:01+00:00");
  EXPECT_EQ(Rfc3339(1'706'702'400'500'000), "2024-01-31T12:00:00.500000+00:00");
  EXPECT_EQ(Rfc3339(-1), "1969-12-31T23:59:59.999999+00:00");
  EXPECT_EQ(Rfc3339(951'782'400'000'000), "2000-02-29T00:00:00+00:00");
}

TEST(AppendRfc3339Test, MatchesTheSharedIsoFormatter) {
  for (int64_t micros = -86'400'000'000; micros < 4'000'000'000'000'000;
       micros += 97'531'234'567'891) {
    std::string expected = FormatIsoTimestamp(micros);  // "...T..:..:...ffffffZ"
    expected.pop_back();
    if (expected.ends_with(".000000")) expected.resize(expected.size() - 7);
    EXPECT_EQ(Rfc3339(micros), expected + "+00:00") << micros;
  }
}

TEST(NewUuidHexTest, IsVersion4Hex) {
  std::string id = NewUuidHex();
  ASSERT_EQ(id.size(), 32u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(id[12], '4');
  EXPECT_NE(std::string("89ab").find(id[16]), std::string::npos);
  EXPECT_NE(NewUuidHex(), id);
}

TEST(AppendJsonStringFastTest, MatchesAppendJsonStringAtEveryOffsetOfAWord) {
  // Every byte that needs an escape, at every position around the eight-byte steps, between
  // plain ASCII and multi-byte UTF-8.
  std::string specials = "\"\\\n\r\t\b\f";
  specials.push_back('\0');
  specials.push_back('\x1f');
  specials.push_back('\x01');
  for (char special : specials) {
    for (size_t length = 0; length < 20; ++length) {
      for (size_t at = 0; at <= length; ++at) {
        std::string text(length, 'a');
        text.insert(at, 1, special);
        text += "é日本\x7f ";
        std::string expected;
        AppendJsonString(expected, text);
        std::string got = "prefix";
        AppendJsonStringFast(got, text);
        ASSERT_EQ(got, "prefix" + expected) << "length " << length << " at " << at;
      }
    }
  }
  std::string empty;
  AppendJsonStringFast(empty, "");
  EXPECT_EQ(empty, "\"\"");
}

TEST(AppendJsonStringFastTest, MatchesAppendJsonStringOnRandomTextAcrossBlockBoundaries) {
  // Lengths around the 8- and 32-byte blocks, drawn mostly from the bytes JSON text is made of
  // (quotes and backslashes dense, as in an escaped record), with control characters and UTF-8.
  static constexpr std::string_view kAlphabet = "\"\\{}:,ax0 \n\t\x01\x1f\x7f\xc3\xa9";
  std::mt19937 random(20261204);
  for (int round = 0; round < 20000; ++round) {
    size_t length = random() % 131;
    std::string text;
    for (size_t k = 0; k < length; ++k) text.push_back(kAlphabet[random() % kAlphabet.size()]);
    std::string expected;
    AppendJsonString(expected, text);
    for (std::string_view escaper : JsonStringEscapers()) {
      std::string got = "x";
      AppendJsonStringWith(got, text, escaper);
      ASSERT_EQ(got, "x" + expected) << escaper << ", round " << round;
    }
  }
  std::string all(64, '"');
  std::string expected;
  AppendJsonString(expected, all);
  for (std::string_view escaper : JsonStringEscapers()) {
    std::string got;
    AppendJsonStringWith(got, all, escaper);
    EXPECT_EQ(got, expected) << escaper;
  }
}

TEST(DestinationRecordWriterTest, WritesTheDestinationRecordFieldByField) {
  RecordBatch batch;
  std::string payload =
      R"({"id":1,"text":"a \"quoted\" line\n","padding":"xxxxxxxxxxxxxxxxxxxxx"})";
  batch.Add("partition_0_offset_7", payload, 1'706'702'400'123'456);
  batch.Add("with \"quote\"", "{}", -1);
  batch.SetExtractedAt(1'706'702'401'000'000);
  DestinationRecordWriter writer;
  writer.StartBatch();
  std::string out = "earlier line\n";
  writer.Append(out, batch, 0, 1'706'702'402'000'001);
  out.push_back('\n');
  writer.Append(out, batch, 1, 1'706'702'402'000'001);
  ASSERT_TRUE(out.starts_with("earlier line\n"));
  std::string_view lines = std::string_view(out).substr(13);
  size_t newline = lines.find('\n');
  ASSERT_NE(newline, std::string_view::npos);
  for (auto [line, id, data, timestamp] :
       {std::tuple{lines.substr(0, newline), std::string("partition_0_offset_7"), payload,
                   std::string("2024-01-31T12:00:00.123456+00:00")},
        std::tuple{lines.substr(newline + 1), std::string("with \"quote\""), std::string("{}"),
                   std::string("1969-12-31T23:59:59.999999+00:00")}}) {
    auto parsed = Value::FromJson(line);
    ASSERT_TRUE(parsed.has_value()) << line;
    std::string uuid = parsed->GetString("bizon_id");
    ASSERT_EQ(uuid.size(), 32u) << line;
    EXPECT_EQ(uuid.find_first_not_of("0123456789abcdef"), std::string::npos);
    EXPECT_EQ(uuid[12], '4');
    // The layout the original writes, built with the plain (byte at a time) JSON escaper.
    std::string reference =
        R"({"bizon_id":")" + uuid + R"(","bizon_extracted_at":"2024-01-31T12:00:01+00:00",)" +
        R"("bizon_loaded_at":"2024-01-31T12:00:02.000001+00:00",)" + R"("source_record_id":)";
    AppendJsonString(reference, id);
    reference += R"(,"source_timestamp":")" + timestamp + R"(","source_data":)";
    AppendJsonString(reference, data);
    reference += "}";
    EXPECT_EQ(std::string(line), reference);
    EXPECT_EQ(parsed->GetString("source_record_id"), id);
    EXPECT_EQ(parsed->GetString("source_data"), data);
    EXPECT_EQ(parsed->GetString("source_timestamp"), timestamp);
    EXPECT_EQ(parsed->GetString("bizon_extracted_at"), "2024-01-31T12:00:01+00:00");
    EXPECT_EQ(parsed->GetString("bizon_loaded_at"), "2024-01-31T12:00:02.000001+00:00");
  }
}

TEST(QuoteDestinationIdTest, EscapesControlCharactersQuotesAndBackslashes) {
  EXPECT_EQ(QuoteDestinationId("plain"), "'plain'");
  EXPECT_EQ(QuoteDestinationId("a\nb\r\tc"), R"('a\nb\r\tc')");
  EXPECT_EQ(QuoteDestinationId(std::string_view("\0\x01\x1f\x7f", 4)), R"('\x00\x01\x1f\x7f')");
  EXPECT_EQ(QuoteDestinationId("it's a \\"), R"('it\'s a \\')");
  EXPECT_EQ(QuoteDestinationId("données_日本 \"; DROP"), "'données_日本 \"; DROP'");
}

TEST(CheckDestinationIdCharactersTest, RefusesEmptyAndControlCharactersOnly) {
  EXPECT_TRUE(CheckDestinationIdCharacters("données_日本 \"'; DROP TABLE x; --/..").ok());
  EXPECT_EQ(CheckDestinationIdCharacters("").code(), StatusCode::kInvalidArgument);
  Status nul = CheckDestinationIdCharacters(std::string_view("a\0b", 3));
  EXPECT_EQ(nul.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(nul.failure_class(), FailureClass::kDestination);
  EXPECT_NE(nul.message().find(R"('a\x00b')"), std::string::npos) << nul.message();
  EXPECT_EQ(CheckDestinationIdCharacters("a\nb").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckDestinationIdCharacters("\x1b[31mred").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace bizon
