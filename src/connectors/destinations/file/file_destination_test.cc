// Crash windows of the file destination that a kill test only hits by luck: each test plays the
// part of a process that died at one point, then a new process resuming the same job.
#include "connectors/destinations/file/file_destination.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "bizon/clock.h"
#include "connectors/destinations/destination_record.h"

namespace bizon {
namespace {

class FileDestinationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/bizon_file_destination_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    // The destination writes inside the working directory, as `bizon run` does in its own.
    previous_dir_ = std::filesystem::current_path();
    std::filesystem::current_path(dir_);
  }
  void TearDown() override {
    std::filesystem::current_path(previous_dir_);
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<FileDestination> Make(
      SyncMode mode, const std::string& job_id,
      std::function<Result<bool>(const std::string&)> job_abandoned = nullptr,
      Value::Map extra_config = {}) {
    DestinationContext context;
    context.job_abandoned = std::move(job_abandoned);
    context.sync = {.name = "pipeline",
                    .job_id = job_id,
                    .source_name = "generator",
                    .stream_name = "records",
                    .sync_mode = mode,
                    .destination_name = "file",
                    .reset = false};
    Value::Map config{{"destination_id", Value("out")}};
    for (auto& entry : extra_config) config.push_back(std::move(entry));
    context.config = Value(std::move(config));
    return std::make_unique<FileDestination>(context);
  }

  static RecordBatch Batch(int first, int count, std::string_view destination_id = {}) {
    RecordBatch batch;
    for (int i = first; i < first + count; ++i) {
      batch.Add(std::to_string(i), "{\"id\":" + std::to_string(i) + "}", NowMicros(),
                destination_id);
    }
    batch.SetExtractedAt(NowMicros());
    return batch;
  }

  std::string Path(std::string_view name) const { return dir_ + "/" + std::string(name); }

  int Lines(std::string_view name) const {
    std::ifstream in(Path(name));
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    return lines;
  }

  std::string ReadFile(std::string_view name) const {
    std::ifstream in(Path(name));
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  std::string dir_;
  std::filesystem::path previous_dir_;
};

#define ASSERT_OK(expr)                              \
  do {                                               \
    ::bizon::Status status_ = (expr);                \
    ASSERT_TRUE(status_.ok()) << status_.ToString(); \
  } while (false)

TEST_F(FileDestinationTest, ResumeAfterFullRefreshRenameKeepsThePublishedFile) {
  // A reset (materialised as a full refresh) died after Finalize() renamed the staging file but
  // before the job was marked succeeded: the resumed job finds no staging file.
  Value state;
  {
    auto first = Make(SyncMode::kFullRefresh, "job1");
    ASSERT_OK(first->Open(Value()));
    auto written = first->Write(Batch(0, 3), NowMicros());
    ASSERT_TRUE(written.has_value()) << written.error().ToString();
    state = *written;
    ASSERT_OK(first->Finalize());
  }
  ASSERT_FALSE(std::filesystem::exists(Path("out_temp.json")));
  auto resumed = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_OK(resumed->Open(state));
  ASSERT_OK(resumed->Finalize());
  ASSERT_OK(resumed->OnJobSucceeded());
  EXPECT_EQ(Lines("out.json"), 3);
  EXPECT_FALSE(std::filesystem::exists(Path("out.json.bizon-job")));
}

TEST_F(FileDestinationTest, SyncedOutputLeavesThePageCache) {
  struct statfs filesystem {};
  ASSERT_EQ(::statfs(dir_.c_str(), &filesystem), 0);
  if (filesystem.f_type == TMPFS_MAGIC) {
    GTEST_SKIP() << dir_ << " is on tmpfs, whose page cache is the file itself: nothing to drop";
  }
  auto destination = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_OK(destination->Open(Value()));
  RecordBatch batch;
  std::string padding(1000, 'x');
  for (int i = 0; i < 4000; ++i) {
    batch.Add(std::to_string(i), "{\"id\":" + std::to_string(i) + ",\"p\":\"" + padding + "\"}",
              NowMicros());
  }
  ASSERT_OK(destination->Append(batch, NowMicros()));
  // Resident pages of the staging file, by mincore() on a mapping of it.
  auto resident = [&]() -> size_t {
    int fd = ::open(Path("out_temp.json").c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    auto size = static_cast<size_t>(::lseek(fd, 0, SEEK_END));
    void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    EXPECT_NE(mapped, MAP_FAILED);
    auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> pages((size + page - 1) / page);
    EXPECT_EQ(::mincore(mapped, size, pages.data()), 0);
    ::munmap(mapped, size);
    size_t count = 0;
    for (unsigned char flags : pages) count += flags & 1;
    return count;
  };
  // Written but not synced: in the page cache (dirty), which is what the check can see.
  ASSERT_GT(resident(), 100u);
  ASSERT_TRUE(destination->Sync().has_value());
  EXPECT_EQ(resident(), 0u);
  // Still all there.
  ASSERT_OK(destination->Finalize());
  EXPECT_EQ(Lines("out.json"), 4000);
}

TEST_F(FileDestinationTest, StreamWriteBeforeTheFirstCommitIsCutBack) {
  // An earlier job left two lines; the new job wrote three, then died before any cursor.
  {
    auto earlier = Make(SyncMode::kStream, "job1");
    ASSERT_OK(earlier->Open(Value()));
    ASSERT_TRUE(earlier->Write(Batch(0, 2), NowMicros()).has_value());
  }
  {
    auto crashed = Make(SyncMode::kStream, "job2");
    ASSERT_OK(crashed->Open(Value()));
    ASSERT_TRUE(crashed->Write(Batch(2, 3), NowMicros()).has_value());
  }
  ASSERT_EQ(Lines("out.json"), 5);
  auto resumed = Make(SyncMode::kStream, "job2");
  ASSERT_OK(resumed->Open(Value()));  // No cursor yet: nothing of job2 is committed.
  EXPECT_EQ(Lines("out.json"), 2);
}

TEST_F(FileDestinationTest, FileFirstTouchedAfterTheLastCommitIsCutBack) {
  Value committed;
  {
    auto crashed = Make(SyncMode::kIncremental, "job1");
    ASSERT_OK(crashed->Open(Value()));
    auto written = crashed->Write(Batch(0, 2), NowMicros());
    ASSERT_TRUE(written.has_value());
    committed = *written;  // The last cursor the backend recorded.
    ASSERT_TRUE(crashed->Write(Batch(2, 2, "routed"), NowMicros()).has_value());
    ASSERT_TRUE(crashed->Write(Batch(4, 1), NowMicros()).has_value());
  }
  auto resumed = Make(SyncMode::kIncremental, "job1");
  ASSERT_OK(resumed->Open(committed));
  EXPECT_EQ(Lines("out_incremental.json"), 2);
  EXPECT_EQ(Lines("routed_incremental.json"), 0);
}

TEST_F(FileDestinationTest, FreshJobEmptiesAnAbandonedJobsStaging) {
  {
    auto abandoned = Make(SyncMode::kFullRefresh, "job1");
    ASSERT_OK(abandoned->Open(Value()));
    ASSERT_TRUE(abandoned->Write(Batch(0, 4), NowMicros()).has_value());
  }
  auto fresh = Make(SyncMode::kFullRefresh, "job2");
  ASSERT_OK(fresh->Open(Value()));
  ASSERT_OK(fresh->Finalize());
  EXPECT_TRUE(std::filesystem::exists(Path("out.json")));
  EXPECT_EQ(Lines("out.json"), 0);  // An empty full refresh publishes an empty file.
}

TEST_F(FileDestinationTest, IncrementalAppendInterruptedHalfWayIsRedoneNotDoubled) {
  Value committed;
  {
    auto first = Make(SyncMode::kIncremental, "job1");
    ASSERT_OK(first->Open(Value()));
    ASSERT_TRUE(first->Write(Batch(0, 3), NowMicros()).has_value());
    ASSERT_OK(first->Finalize());
    ASSERT_OK(first->OnJobSucceeded());
  }
  {
    auto crashed = Make(SyncMode::kIncremental, "job2");
    ASSERT_OK(crashed->Open(Value()));
    auto written = crashed->Write(Batch(3, 2), NowMicros());
    ASSERT_TRUE(written.has_value());
    committed = *written;
    ASSERT_OK(crashed->Finalize());  // Appended, then died before the job succeeded.
  }
  ASSERT_EQ(Lines("out.json"), 5);
  auto resumed = Make(SyncMode::kIncremental, "job2");
  ASSERT_OK(resumed->Open(committed));
  ASSERT_OK(resumed->Finalize());
  ASSERT_OK(resumed->OnJobSucceeded());
  EXPECT_EQ(Lines("out.json"), 5);
  EXPECT_FALSE(std::filesystem::exists(Path("out_incremental.json")));
}

// The crashed job of the test above is never resumed: a run with force_ignore_checkpoint
// abandons it and starts a new job, which reads its records again. Its append must be undone.
TEST_F(FileDestinationTest, AppendOfAnAbandonedJobIsUndoneByTheNextJob) {
  {
    auto first = Make(SyncMode::kIncremental, "job1");
    ASSERT_OK(first->Open(Value()));
    ASSERT_TRUE(first->Write(Batch(0, 3), NowMicros()).has_value());
    ASSERT_OK(first->Finalize());
    ASSERT_OK(first->OnJobSucceeded());
  }
  {
    auto crashed = Make(SyncMode::kIncremental, "job2");
    ASSERT_OK(crashed->Open(Value()));
    ASSERT_TRUE(crashed->Write(Batch(3, 2), NowMicros()).has_value());
    ASSERT_OK(crashed->Finalize());  // Appended, then died; then cancelled by the next run.
  }
  ASSERT_EQ(Lines("out.json"), 5);
  std::vector<std::string> asked;
  auto abandoned = [&asked](const std::string& job_id) -> Result<bool> {
    asked.push_back(job_id);
    return job_id == "job2";
  };
  auto next = Make(SyncMode::kIncremental, "job3", abandoned);
  ASSERT_OK(next->Open(Value()));
  EXPECT_EQ(asked, std::vector<std::string>{"job2"});
  EXPECT_EQ(Lines("out.json"), 3);  // job1's rows only: job3 reads job2's again.
  ASSERT_TRUE(next->Write(Batch(3, 4), NowMicros()).has_value());
  ASSERT_OK(next->Finalize());
  ASSERT_OK(next->OnJobSucceeded());
  EXPECT_EQ(Lines("out.json"), 7);
  EXPECT_FALSE(std::filesystem::exists(Path("out.json.bizon-append")));
}

// A journal left by a job that did succeed (it died between being marked succeeded and removing
// the journal) is only removed: its append is complete.
TEST_F(FileDestinationTest, JournalOfASucceededJobLeavesTheFileAlone) {
  {
    auto crashed = Make(SyncMode::kIncremental, "job1");
    ASSERT_OK(crashed->Open(Value()));
    ASSERT_TRUE(crashed->Write(Batch(0, 3), NowMicros()).has_value());
    ASSERT_OK(crashed->Finalize());
  }
  ASSERT_TRUE(std::filesystem::exists(Path("out.json.bizon-append")));
  auto next = Make(SyncMode::kIncremental, "job2",
                   [](const std::string&) -> Result<bool> { return false; });
  ASSERT_OK(next->Open(Value()));
  EXPECT_EQ(Lines("out.json"), 3);
  EXPECT_FALSE(std::filesystem::exists(Path("out.json.bizon-append")));
}

TEST(FileDestinationIdTest, RefusesIdsThatLeaveTheWorkingDirectory) {
  for (std::string_view id :
       {"/abs", "/etc/evil", "..", "../x", "../../etc/evil", "a/..", "a/../../b", "a/../b"}) {
    Status checked = CheckFileDestinationId(id);
    EXPECT_EQ(checked.code(), StatusCode::kInvalidArgument) << id;
    EXPECT_EQ(checked.failure_class(), FailureClass::kDestination) << id;
    EXPECT_NE(checked.message().find(QuoteDestinationId(id)), std::string::npos)
        << checked.message();
  }
  EXPECT_NE(CheckFileDestinationId("/abs").message().find("absolute"), std::string::npos);
  EXPECT_NE(CheckFileDestinationId("a/../b").message().find("'..'"), std::string::npos);
}

TEST(FileDestinationIdTest, RefusesEmptyIdsAndControlCharactersShowingThemEscaped) {
  EXPECT_EQ(CheckFileDestinationId("").code(), StatusCode::kInvalidArgument);
  Status nul = CheckFileDestinationId(std::string_view("out\0x", 5));
  EXPECT_EQ(nul.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nul.message().find(R"('out\x00x')"), std::string::npos) << nul.message();
  Status newline = CheckFileDestinationId("out\nINFO forged line");
  EXPECT_EQ(newline.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(newline.message().find(R"('out\nINFO forged line')"), std::string::npos);
  EXPECT_EQ(newline.message().find('\n'), std::string::npos);
  EXPECT_EQ(CheckFileDestinationId("tab\there").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckFileDestinationId("del\x7f").code(), StatusCode::kInvalidArgument);
}

TEST(FileDestinationIdTest, AcceptsSubfoldersAndOrdinaryHostileText) {
  for (std::string_view id :
       {"a/b", "a/b/c", "./a", "a..b", "..a", "a..", ".hidden", "x; DROP TABLE x; --",
        "quote\"double", "quote'single", "with space", "données_日本", "back\\slash"}) {
    EXPECT_TRUE(CheckFileDestinationId(id).ok())
        << id << ": " << CheckFileDestinationId(id).ToString();
  }
}

TEST_F(FileDestinationTest, ARecordIdLeavingTheDirectoryFailsTheWriteBeforeAnyFileIsTouched) {
  // A previous full refresh published out.json; the next one routes a record to ../escaped.
  {
    auto previous = Make(SyncMode::kFullRefresh, "job1");
    ASSERT_OK(previous->Open(Value()));
    ASSERT_TRUE(previous->Write(Batch(0, 2), NowMicros()).has_value());
    ASSERT_OK(previous->Finalize());
    ASSERT_OK(previous->OnJobSucceeded());
  }
  std::string published = ReadFile("out.json");
  ASSERT_EQ(Lines("out.json"), 2);
  std::filesystem::create_directory(Path("inner"));
  std::filesystem::current_path(Path("inner"));  // So that ../escaped would land in dir_.

  auto destination = Make(SyncMode::kFullRefresh, "job2");
  ASSERT_OK(destination->Open(Value()));
  RecordBatch batch;
  batch.Add("1", R"({"id":1})", NowMicros(), "good");
  batch.Add("2", R"({"id":2})", NowMicros());
  batch.Add("3", R"({"id":3})", NowMicros(), "../escaped");
  batch.SetExtractedAt(NowMicros());
  auto written = destination->Write(batch, NowMicros());
  ASSERT_FALSE(written.has_value());
  EXPECT_EQ(written.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(written.error().failure_class(), FailureClass::kDestination);
  EXPECT_NE(written.error().message().find("'../escaped'"), std::string::npos)
      << written.error().ToString();
  EXPECT_FALSE(std::filesystem::exists(Path("escaped.json")));
  EXPECT_FALSE(std::filesystem::exists(Path("escaped_temp.json")));
  // Nothing of the refused batch was written, not even its acceptable records.
  EXPECT_FALSE(std::filesystem::exists(Path("inner/good_temp.json")));
  EXPECT_EQ(Lines("inner/out_temp.json"), 0);
  std::filesystem::current_path(dir_);
  EXPECT_EQ(ReadFile("out.json"), published);
}

TEST_F(FileDestinationTest, StreamRefusesANulInARecordIdWithoutAppending) {
  auto destination = Make(SyncMode::kStream, "job1");
  ASSERT_OK(destination->Open(Value()));
  ASSERT_TRUE(destination->Write(Batch(0, 2), NowMicros()).has_value());
  RecordBatch batch;
  batch.Add("2", R"({"id":2})", NowMicros());
  batch.Add("3", R"({"id":3})", NowMicros(), std::string_view("out\0/../../x", 12));
  batch.SetExtractedAt(NowMicros());
  auto written = destination->Write(batch, NowMicros());
  ASSERT_FALSE(written.has_value());
  EXPECT_NE(written.error().message().find(R"('out\x00/../../x')"), std::string::npos)
      << written.error().ToString();
  EXPECT_EQ(Lines("out.json"), 2);
}

TEST_F(FileDestinationTest, ASubfolderIdWritesInsideItWhenTheFolderExists) {
  std::filesystem::create_directory(Path("sub"));
  auto destination = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_OK(destination->Open(Value()));
  ASSERT_TRUE(destination->Write(Batch(0, 3, "sub/routed"), NowMicros()).has_value());
  ASSERT_OK(destination->Finalize());
  EXPECT_EQ(Lines("sub/routed.json"), 3);
  EXPECT_FALSE(std::filesystem::exists(Path("sub/routed_temp.json")));

  // A folder that does not exist is not created: the write fails as any unwritable path does.
  auto missing = Make(SyncMode::kFullRefresh, "job2");
  ASSERT_OK(missing->Open(Value()));
  auto written = missing->Write(Batch(0, 1, "nowhere/routed"), NowMicros());
  ASSERT_FALSE(written.has_value());
  EXPECT_EQ(written.error().failure_class(), FailureClass::kDestination);
  EXPECT_FALSE(std::filesystem::exists(Path("nowhere")));
}

TEST_F(FileDestinationTest, TwoIdsSharingAFileAreRefused) {
  // `out` stages into out_temp.json, which is the main file of the id `out_temp`.
  auto destination = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_OK(destination->Open(Value()));
  auto written = destination->Write(Batch(0, 1, "out_temp"), NowMicros());
  ASSERT_FALSE(written.has_value());
  EXPECT_NE(written.error().message().find("'out_temp' and 'out'"), std::string::npos)
      << written.error().ToString();
}

TEST_F(FileDestinationTest, RowsAppendedAfterTheLastSyncAreCutBackOnResume) {
  // Append() writes as it goes; only Sync() makes a point the cursor may record.
  Value state;
  {
    auto crashed = Make(SyncMode::kFullRefresh, "job1");
    ASSERT_OK(crashed->Open(Value()));
    ASSERT_OK(crashed->Append(Batch(0, 2), NowMicros()));
    auto synced = crashed->Sync();
    ASSERT_TRUE(synced.has_value()) << synced.error().ToString();
    state = *synced;
    // Big enough to be written out (past the 1 MiB chunk), then the process dies unsynced.
    RecordBatch big;
    std::string padding(2000, 'x');
    for (int i = 2; i < 1002; ++i) {
      big.Add(std::to_string(i), R"({"padding":")" + padding + R"("})", NowMicros());
    }
    ASSERT_OK(crashed->Append(big, NowMicros()));
    EXPECT_GT(Lines("out_temp.json"), 2);
  }
  auto resumed = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_OK(resumed->Open(state));
  EXPECT_EQ(Lines("out_temp.json"), 2);
  ASSERT_TRUE(resumed->Write(Batch(2, 1), NowMicros()).has_value());
  ASSERT_OK(resumed->Finalize());
  EXPECT_EQ(Lines("out.json"), 3);
}

TEST_F(FileDestinationTest, WritesSpanningManyChunksReportTheFileLength) {
  auto destination = Make(SyncMode::kStream, "job1");
  ASSERT_OK(destination->Open(Value()));
  RecordBatch big;
  std::string padding(1500, 'y');
  for (int i = 0; i < 3000; ++i) {
    big.Add(std::to_string(i), R"({"id":)" + std::to_string(i) + R"(,"p":")" + padding + R"("})",
            NowMicros());
  }
  auto written = destination->Write(big, NowMicros());
  ASSERT_TRUE(written.has_value()) << written.error().ToString();
  EXPECT_EQ(Lines("out.json"), 3000);
  EXPECT_EQ(written->Find("files")->GetInteger("out"),
            static_cast<int64_t>(std::filesystem::file_size(Path("out.json"))));
  std::string text = ReadFile("out.json");
  EXPECT_NE(text.find(R"(\"id\":2999,)"), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
}

TEST_F(FileDestinationTest, AFailedAppendLeavesTheFileAtItsLastSync) {
  Value::Map unnest{
      {"unnest", Value(true)},
      {"record_schemas",
       Value(Value::List{Value(Value::Map{
           {"destination_id", Value("out")},
           {"record_schema", Value(Value::List{Value(Value::Map{{"name", Value("p")}})})}})})}};
  auto destination = Make(SyncMode::kStream, "job1", nullptr, unnest);
  ASSERT_OK(destination->Open(Value()));
  RecordBatch first;
  first.Add("0", R"({"p":"first"})", NowMicros());
  auto synced = destination->Write(first, NowMicros());
  ASSERT_TRUE(synced.has_value()) << synced.error().ToString();
  int64_t length = static_cast<int64_t>(std::filesystem::file_size(Path("out.json")));
  // More than a chunk of good records is written out before the bad one fails the batch.
  RecordBatch bad;
  std::string padding(2000, 'z');
  for (int i = 1; i < 1001; ++i) bad.Add(std::to_string(i), R"({"p":")" + padding + R"("})", 0);
  bad.Add("1001", "[1]", 0);
  Status appended = destination->Append(bad, NowMicros());
  ASSERT_FALSE(appended.ok());
  EXPECT_NE(appended.message().find("record 1001 is not a JSON object"), std::string::npos)
      << appended.ToString();
  EXPECT_EQ(static_cast<int64_t>(std::filesystem::file_size(Path("out.json"))), length);
  // The destination stays usable: the next batch lands after the synced rows.
  auto next = destination->Write(first, NowMicros());
  ASSERT_TRUE(next.has_value()) << next.error().ToString();
  EXPECT_EQ(Lines("out.json"), 2);
  EXPECT_EQ(next->Find("files")->GetInteger("out"),
            static_cast<int64_t>(std::filesystem::file_size(Path("out.json"))));
}

}  // namespace
}  // namespace bizon
