// The file destination's Parquet format (PartsDestination over LocalPartStore) through the crash
// windows a kill test only hits by luck: each test plays a process that died at one point, then
// a new process resuming (or replacing) the job.
#include "connectors/destinations/file/local_part_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "connectors/destinations/parquet/parts_destination.h"
#include "duckdb/duckdb_client.h"

namespace bizon {
namespace {

namespace fs = std::filesystem;

class LocalPartStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bizon_local_parts_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    previous_dir_ = fs::current_path();
    fs::current_path(dir_);
  }
  void TearDown() override {
    fs::current_path(previous_dir_);
    fs::remove_all(dir_);
  }

  static std::unique_ptr<PartsDestination> Make(
      SyncMode mode, const std::string& job_id,
      std::function<Result<bool>(const std::string&)> job_abandoned = nullptr,
      int64_t max_part_bytes = 8 << 20) {
    PartsDestinationOptions options{.sync = {.name = "pipeline",
                                             .job_id = job_id,
                                             .source_name = "generator",
                                             .stream_name = "records",
                                             .sync_mode = mode,
                                             .destination_name = "file"},
                                    .job_abandoned = std::move(job_abandoned),
                                    .default_destination_id = "out",
                                    .max_part_bytes = max_part_bytes,
                                    .label = "file destination"};
    return std::make_unique<PartsDestination>(std::move(options),
                                              std::make_unique<LocalPartStore>("out"));
  }

  static RecordBatch Batch(int first, int count, std::string_view destination_id = {}) {
    RecordBatch batch;
    for (int i = first; i < first + count; ++i) {
      batch.Add(std::to_string(i), "{\"n\":" + std::to_string(i) + "}", 0, destination_id);
    }
    return batch;
  }

  /// The source record ids in the published table `dir`, sorted numerically, comma-separated.
  static std::string Ids(const std::string& dir = "out") {
    std::vector<std::string> files;
    if (fs::exists(dir)) {
      for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().extension() == ".parquet") files.push_back(entry.path().string());
      }
    }
    if (files.empty()) return "";
    auto database = DuckDatabase::Open("", FailureClass::kDestination);
    auto connection = DuckConnection::Connect(*database);
    std::string list;
    for (const std::string& file : files)
      list += (list.empty() ? "" : ",") + DuckQuoteLiteral(file);
    auto value = connection->QueryValue(
        "SELECT string_agg(source_record_id, ',' ORDER BY source_record_id::INT) FROM "
        "read_parquet([" +
        list + "])");
    EXPECT_TRUE(value.has_value()) << value.error().message();
    return value.has_value() && *value ? **value : "";
  }

  static Value Write(PartsDestination& destination, const RecordBatch& batch) {
    auto state = destination.Write(batch, 0);
    EXPECT_TRUE(state.has_value()) << state.error().message();
    return state.has_value() ? *state : Value();
  }

  fs::path dir_;
  fs::path previous_dir_;
};

TEST_F(LocalPartStoreTest, FullRefreshSwapsTheStagedTableInAtFinalize) {
  fs::create_directory("out");
  std::ofstream("out/old-000001.parquet") << "previous table";
  auto destination = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_TRUE(destination->Open(Value()).ok());
  Value state = Write(*destination, Batch(0, 3));
  EXPECT_EQ(state.ToJson(), R"({"parts":{"out":1}})");
  Write(*destination, Batch(3, 2));
  EXPECT_TRUE(fs::exists("out/old-000001.parquet"));  // Nothing published before Finalize.
  ASSERT_TRUE(destination->Finalize().ok());
  EXPECT_FALSE(fs::exists("out/old-000001.parquet"));
  EXPECT_TRUE(fs::exists("out/job1-000001.parquet"));
  EXPECT_TRUE(fs::exists("out/job1-000002.parquet"));
  EXPECT_EQ(Ids(), "0,1,2,3,4");
  // Finalize again (a crash before the job was marked succeeded) does not swap back.
  ASSERT_TRUE(destination->Finalize().ok());
  EXPECT_EQ(Ids(), "0,1,2,3,4");
  ASSERT_TRUE(destination->OnJobSucceeded().ok());
  EXPECT_FALSE(fs::exists("out.bizon-staging"));
  EXPECT_FALSE(fs::exists("out.bizon-parts-job"));
  EXPECT_FALSE(fs::exists("out/.bizon-job-job1"));
}

TEST_F(LocalPartStoreTest, AnEmptyFullRefreshPublishesAnEmptyTable) {
  fs::create_directory("out");
  std::ofstream("out/old-000001.parquet") << "previous table";
  auto destination = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_TRUE(destination->Open(Value()).ok());
  ASSERT_TRUE(destination->Finalize().ok());
  ASSERT_TRUE(destination->OnJobSucceeded().ok());
  EXPECT_TRUE(fs::is_directory("out"));
  EXPECT_TRUE(fs::is_empty("out"));
}

TEST_F(LocalPartStoreTest, StreamPublishesAPartOnlyOnceItsCursorIsRecorded) {
  auto destination = Make(SyncMode::kStream, "job1");
  ASSERT_TRUE(destination->Open(Value()).ok());
  Value first = Write(*destination, Batch(0, 2));
  EXPECT_EQ(Ids(), "");
  ASSERT_TRUE(destination->OnCursorRecorded(first).ok());
  EXPECT_EQ(Ids(), "0,1");
  ASSERT_TRUE(destination->OnCursorRecorded(first).ok());  // Idempotent.
  Write(*destination, Batch(2, 2));  // Its cursor is never recorded: the process dies.
  destination.reset();

  auto resumed = Make(SyncMode::kStream, "job1");
  ASSERT_TRUE(resumed->Open(first).ok());
  EXPECT_FALSE(fs::exists("out.bizon-staging/job1-000002.parquet"));
  Value second = Write(*resumed, Batch(2, 3));
  EXPECT_EQ(second.ToJson(), R"({"parts":{"out":2}})");
  ASSERT_TRUE(resumed->OnCursorRecorded(second).ok());
  EXPECT_EQ(Ids(), "0,1,2,3,4");
}

TEST_F(LocalPartStoreTest, StreamResumePublishesARecordedPartACrashLeftStaged) {
  auto destination = Make(SyncMode::kStream, "job1");
  ASSERT_TRUE(destination->Open(Value()).ok());
  Value state = Write(*destination, Batch(0, 2));
  destination.reset();  // Died after the cursor was recorded, before OnCursorRecorded.
  auto resumed = Make(SyncMode::kStream, "job1");
  ASSERT_TRUE(resumed->Open(state).ok());
  EXPECT_EQ(Ids(), "0,1");
}

// The manifest names a table before its staging directory is made: a job that died in between
// resumes with the table known and no directory to write its parts into.
TEST_F(LocalPartStoreTest, AResumeRemakesAStagingDirectoryTheDeadRunNeverMade) {
  for (SyncMode mode : {SyncMode::kStream, SyncMode::kIncremental, SyncMode::kFullRefresh}) {
    SCOPED_TRACE(ToString(mode));
    fs::remove_all("out");
    fs::remove_all("out.bizon-staging");
    {
      auto destination = Make(mode, "job1");
      ASSERT_TRUE(destination->Open(Value()).ok());
    }
    fs::remove_all("out.bizon-staging");  // As if killed between the manifest and the mkdir.
    auto resumed = Make(mode, "job1");
    ASSERT_TRUE(resumed->Open(Value()).ok());
    Value state = Write(*resumed, Batch(0, 3));
    ASSERT_TRUE(resumed->OnCursorRecorded(state).ok());
    ASSERT_TRUE(resumed->Finalize().ok());
    EXPECT_EQ(Ids(), "0,1,2");
    ASSERT_TRUE(resumed->OnJobSucceeded().ok());
  }
}

TEST_F(LocalPartStoreTest, IncrementalResumeDropsUnrecordedPartsEvenPublishedOnes) {
  fs::create_directory("out");
  auto destination = Make(SyncMode::kIncremental, "job1");
  ASSERT_TRUE(destination->Open(Value()).ok());
  Value first = Write(*destination, Batch(0, 2));
  Write(*destination, Batch(2, 2));
  ASSERT_TRUE(destination->Finalize().ok());  // Published part 2, whose cursor never landed.
  destination.reset();

  auto resumed = Make(SyncMode::kIncremental, "job1");
  ASSERT_TRUE(resumed->Open(first).ok());
  EXPECT_EQ(Ids(), "0,1");
  Write(*resumed, Batch(2, 3));
  ASSERT_TRUE(resumed->Finalize().ok());
  ASSERT_TRUE(resumed->Finalize().ok());
  EXPECT_EQ(Ids(), "0,1,2,3,4");
  ASSERT_TRUE(resumed->OnJobSucceeded().ok());
  EXPECT_FALSE(fs::exists("out.bizon-staging"));
}

TEST_F(LocalPartStoreTest, ANewJobUndoesThePublishOfAnAbandonedIncrementalJob) {
  auto earlier = Make(SyncMode::kIncremental, "job1");
  ASSERT_TRUE(earlier->Open(Value()).ok());
  Write(*earlier, Batch(0, 2));
  ASSERT_TRUE(earlier->Finalize().ok());  // Then died before it was marked succeeded.
  earlier.reset();
  EXPECT_EQ(Ids(), "0,1");

  auto next = Make(SyncMode::kIncremental, "job2",
                   [](const std::string& job) -> Result<bool> { return job == "job1"; });
  ASSERT_TRUE(next->Open(Value()).ok());
  EXPECT_EQ(Ids(), "");
  Write(*next, Batch(0, 3));
  ASSERT_TRUE(next->Finalize().ok());
  EXPECT_EQ(Ids(), "0,1,2");
}

TEST_F(LocalPartStoreTest, ANewJobKeepsWhatASucceededJobPublished) {
  auto earlier = Make(SyncMode::kIncremental, "job1");
  ASSERT_TRUE(earlier->Open(Value()).ok());
  Write(*earlier, Batch(0, 2));
  ASSERT_TRUE(earlier->Finalize().ok());  // Marked succeeded, died before OnJobSucceeded.
  earlier.reset();
  auto next = Make(SyncMode::kIncremental, "job2",
                   [](const std::string&) -> Result<bool> { return false; });
  ASSERT_TRUE(next->Open(Value()).ok());
  Write(*next, Batch(2, 1));
  ASSERT_TRUE(next->Finalize().ok());
  EXPECT_EQ(Ids(), "0,1,2");
}

TEST_F(LocalPartStoreTest, RoutedRecordsGoToATableEachAndBadIdsAreRefusedFirst) {
  auto destination = Make(SyncMode::kIncremental, "job1");
  ASSERT_TRUE(destination->Open(Value()).ok());
  RecordBatch batch = Batch(0, 2, "a");
  batch.AppendRange(Batch(2, 1, "b"), 0, 1);
  Value state = Write(*destination, batch);
  EXPECT_EQ(state.ToJson(), R"({"parts":{"a":1,"b":1,"out":0}})");
  ASSERT_TRUE(destination->Finalize().ok());
  EXPECT_EQ(Ids("a"), "0,1");
  EXPECT_EQ(Ids("b"), "2");

  RecordBatch bad = Batch(3, 1, "c");
  bad.AppendRange(Batch(4, 1, "../escape"), 0, 1);
  auto refused = destination->Write(bad, 0);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("'../escape'"), std::string::npos);
  EXPECT_FALSE(fs::exists("c"));  // Nothing of the batch was written.
}

TEST_F(LocalPartStoreTest, APartIsStagedWhenItFillsAndAFailedAppendTakesItBack) {
  // Each record is 8 bytes of id and payload: a part every two records.
  auto destination = Make(SyncMode::kStream, "job1", nullptr, 16);
  ASSERT_TRUE(destination->Open(Value()).ok());
  ASSERT_TRUE(destination->Append(Batch(0, 5), 0).ok());
  EXPECT_TRUE(fs::exists("out.bizon-staging/job1-000002.parquet"));
  auto state = destination->Sync();
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->ToJson(), R"({"parts":{"out":3}})");
  ASSERT_TRUE(destination->OnCursorRecorded(*state).ok());
  EXPECT_EQ(Ids(), "0,1,2,3,4");

  RecordBatch failing = Batch(5, 4);
  failing.AppendRange(Batch(9, 1, "../escape"), 0, 1);
  ASSERT_TRUE(destination->Append(Batch(5, 4), 0).ok());  // Stages parts 4 and 5.
  EXPECT_TRUE(fs::exists("out.bizon-staging/job1-000005.parquet"));
  // A write that fails after parts were staged since the last Sync takes them back.
  ASSERT_FALSE(destination->Append(failing, 0).ok());
  EXPECT_FALSE(fs::exists("out.bizon-staging/job1-000004.parquet"));
  EXPECT_FALSE(fs::exists("out.bizon-staging/job1-000005.parquet"));
  state = destination->Sync();
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->ToJson(), R"({"parts":{"out":3}})");
}

}  // namespace
}  // namespace bizon
