#include "connectors/sources/sana_ai/sana_ai_export.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

JsonPage Page(std::string_view json) { return JsonPage(std::string(json), "GET test/jobs/j1"); }

std::vector<std::vector<std::string>> Records(std::string_view csv) {
  std::vector<std::vector<std::string>> out;
  Status status = ForEachCsvRecord(csv, [&](std::vector<std::string>& fields, size_t) {
    out.push_back(fields);
    return Status::Ok();
  });
  EXPECT_TRUE(status.ok()) << status.ToString();
  return out;
}

std::vector<std::string> Payloads(const RecordBatch& batch) {
  std::vector<std::string> out;
  for (size_t i = 0; i < batch.size(); ++i) out.emplace_back(batch.payload(i));
  return out;
}

TEST(SanaAiExportTest, StatusesAreClassified) {
  EXPECT_EQ(ClassifySanaJobStatus("successful"), SanaJobPhase::kSucceeded);
  for (std::string_view failed : {"failed", "error", "cancelled", "canceled", "expired"}) {
    EXPECT_EQ(ClassifySanaJobStatus(failed), SanaJobPhase::kFailed) << failed;
  }
  for (std::string_view running : {"pending", "queued", "running", "processing", "Successful"}) {
    EXPECT_EQ(ClassifySanaJobStatus(running), SanaJobPhase::kRunning) << running;
  }
}

TEST(SanaAiExportTest, JobIdAndStates) {
  auto id = ReadSanaJobId(Page(R"({"data": {"jobId": "j1"}})"));
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(*id, "j1");
  EXPECT_FALSE(ReadSanaJobId(Page(R"({"data": {}})")).has_value());
  EXPECT_FALSE(ReadSanaJobId(Page(R"({"data": {"jobId": 7}})")).has_value());

  auto pending = ReadSanaJobState(Page(R"({"data": {"jobId": "j1", "status": "pending"}})"));
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(pending->phase, SanaJobPhase::kRunning);

  auto done = ReadSanaJobState(
      Page(R"({"data": {"status": "successful", "link": {"url": "https://x/r.csv"}}})"));
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->phase, SanaJobPhase::kSucceeded);
  EXPECT_EQ(done->link_url, "https://x/r.csv");

  auto failed = ReadSanaJobState(
      Page(R"({"data": {"status": "failed", "error": {"message": "column \"x\" missing"}}})"));
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->phase, SanaJobPhase::kFailed);
  EXPECT_EQ(failed->error, "column \"x\" missing");
  auto enveloped = ReadSanaJobState(Page(R"({"data": {"status": "error"}, "error": "boom"})"));
  ASSERT_TRUE(enveloped.has_value());
  EXPECT_EQ(enveloped->error, "boom");
}

TEST(SanaAiExportTest, MalformedJobAnswersAreSourceErrors) {
  for (std::string_view body : {R"({"data": {}})", R"({"data": {"status": "successful"}})",
                                R"({"data": {"status": 3}})", R"({"data": )"}) {
    auto state = ReadSanaJobState(Page(body));
    ASSERT_FALSE(state.has_value()) << body;
    EXPECT_EQ(state.error().failure_class(), FailureClass::kSource) << body;
  }
}

TEST(SanaAiExportTest, CsvQuotingAndLineEnds) {
  EXPECT_EQ(Records("a,b\r\n1,2\n3,\r\"x,y\",\"say \"\"hi\"\"\"\n"),
            (std::vector<std::vector<std::string>>{
                {"a", "b"}, {"1", "2"}, {"3", ""}, {"x,y", "say \"hi\""}}));
  // Newlines inside quotes stay; blank lines give no fields; no final newline is fine.
  EXPECT_EQ(Records("\"l1\r\nl2\"\n\n,\nlast"),
            (std::vector<std::vector<std::string>>{{"l1\r\nl2"}, {}, {"", ""}, {"last"}}));
  // As Python's csv: a quote inside an unquoted field is text, text after a closing quote kept.
  EXPECT_EQ(Records("ab\"c,\"d\"e\n"), (std::vector<std::vector<std::string>>{{"ab\"c", "de"}}));
  EXPECT_EQ(Records(""), (std::vector<std::vector<std::string>>{}));
}

TEST(SanaAiExportTest, CsvEndingInsideAQuoteFails) {
  Status status = ForEachCsvRecord("a\n\"open\nstill open",
                                   [](std::vector<std::string>&, size_t) { return Status::Ok(); });
  EXPECT_EQ(status.failure_class(), FailureClass::kSource);
  EXPECT_NE(status.message().find("opened on line 2"), std::string::npos) << status.message();
}

TEST(SanaAiExportTest, RowsBecomeRecordsKeyedByIndex) {
  auto records =
      SanaReportRecords("\xEF\xBB\xBFuser,user_status\nann,active\n\nbob,\"dis\nabled\"\ncid\n", 5);
  ASSERT_TRUE(records.has_value()) << records.error().ToString();
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ(records->id(0), "0");
  EXPECT_EQ(records->id(2), "2");
  EXPECT_EQ(records->timestamp_us(1), 5);
  EXPECT_EQ(Payloads(*records),
            (std::vector<std::string>{R"({"user":"ann","user_status":"active"})",
                                      R"({"user":"bob","user_status":"dis\nabled"})",
                                      R"({"user":"cid","user_status":null})"}));
}

TEST(SanaAiExportTest, RepeatedColumnKeepsItsPlaceAndTheLastValue) {
  auto records = SanaReportRecords("a,b,a\n1,2,3\n", 0);
  ASSERT_TRUE(records.has_value());
  EXPECT_EQ(Payloads(*records), (std::vector<std::string>{R"({"a":"3","b":"2"})"}));
}

TEST(SanaAiExportTest, BadReportsFail) {
  auto longer = SanaReportRecords("a,b\n1,2\n1,2,3\n", 0);
  ASSERT_FALSE(longer.has_value());
  EXPECT_NE(longer.error().message().find("line 3, 3 fields for 2 columns"), std::string::npos)
      << longer.error().message();
  auto binary = SanaReportRecords("a\n\xff\xfe\n", 0);
  ASSERT_FALSE(binary.has_value());
  EXPECT_EQ(binary.error().failure_class(), FailureClass::kSource);
  auto header_only = SanaReportRecords("a,b\n", 0);
  ASSERT_TRUE(header_only.has_value());
  EXPECT_TRUE(header_only->empty());
}

}  // namespace
}  // namespace bizon
