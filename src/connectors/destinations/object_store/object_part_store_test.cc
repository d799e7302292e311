// The gcs and s3 destinations' exactly-once steps (PartsDestination over ObjectPartStore) on an
// in-memory bucket, through the crash windows a kill test only hits by luck; and GcsObjectStore
// against the GCS emulator.
#include "connectors/destinations/object_store/object_part_store.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <random>

#include "connectors/destinations/object_store/gcs_object_store.h"
#include "connectors/destinations/parquet/parts_destination.h"
#include "testing/test_servers.h"

namespace bizon {
namespace {

/// A bucket in memory. Copy counts its calls, so tests can see what publishing did.
class MemoryObjectStore final : public ObjectStore {
 public:
  explicit MemoryObjectStore(std::map<std::string, std::string>* objects) : objects_(objects) {}

  Status PutFile(const std::string& name, const std::string& local_path) override {
    std::ifstream in(local_path, std::ios::binary);
    if (!in) return NotFoundError("no file " + local_path, FailureClass::kDestination);
    (*objects_)[name] =
        std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return Status::Ok();
  }
  Status Put(const std::string& name, const std::string& data) override {
    (*objects_)[name] = data;
    return Status::Ok();
  }
  Result<std::string> Get(const std::string& name) override {
    auto found = objects_->find(name);
    if (found == objects_->end()) return Fail(NotFoundError("no object " + name));
    return found->second;
  }
  Status Copy(const std::string& from, const std::string& to) override {
    auto found = objects_->find(from);
    if (found == objects_->end()) return NotFoundError("no object " + from);
    (*objects_)[to] = found->second;
    return Status::Ok();
  }
  Status Delete(const std::string& name) override {
    objects_->erase(name);
    return Status::Ok();
  }
  Result<std::vector<StoredObject>> List(const std::string& prefix) override {
    std::vector<StoredObject> listed;
    for (const auto& [name, data] : *objects_) {
      if (name.starts_with(prefix)) listed.push_back({name, static_cast<int64_t>(data.size())});
    }
    return listed;
  }
  std::string Uri(const std::string& name) const override { return "mem://b/" + name; }

 private:
  std::map<std::string, std::string>* objects_;
};

class ObjectPartStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<PartsDestination> Make(SyncMode mode, const std::string& job_id,
                                         PartFormat format = PartFormat::kParquet) {
    // The scratch directory is one per pipeline: ctest runs these tests side by side, so each
    // is a pipeline of its own (a run lock keeps two processes of one pipeline apart for real).
    auto store =
        ObjectPartStore::Make(std::make_unique<MemoryObjectStore>(&objects_), "/lake/raw/", "out",
                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    EXPECT_TRUE(store.has_value());
    PartsDestinationOptions options{.sync = {.name = "pipeline",
                                             .job_id = job_id,
                                             .source_name = "generator",
                                             .stream_name = "records",
                                             .sync_mode = mode,
                                             .destination_name = "gcs"},
                                    .default_destination_id = "out",
                                    .format = format,
                                    .label = "gcs destination"};
    return std::make_unique<PartsDestination>(std::move(options), std::move(*store));
  }

  static RecordBatch Batch(int first, int count) {
    RecordBatch batch;
    for (int i = first; i < first + count; ++i) batch.Add(std::to_string(i), "{}", 0);
    return batch;
  }

  static Value Write(PartsDestination& destination, const RecordBatch& batch) {
    auto state = destination.Write(batch, 0);
    EXPECT_TRUE(state.has_value()) << state.error().message();
    return state.has_value() ? *state : Value();
  }

  /// Object names, those of the job manifest left out.
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& [name, data] : objects_) {
      if (!name.ends_with(".job.json")) names.push_back(name);
    }
    return names;
  }

  std::map<std::string, std::string> objects_;
};

TEST_F(ObjectPartStoreTest, FullRefreshStagesThenReplacesThePreviousTable) {
  objects_["lake/raw/out/old-000001.parquet"] = "previous";
  objects_["lake/raw/out/deeper/other-000001.parquet"] = "another table";
  auto destination = Make(SyncMode::kFullRefresh, "job1");
  ASSERT_TRUE(destination->Open(Value()).ok());
  Write(*destination, Batch(0, 2));
  Write(*destination, Batch(2, 2));
  EXPECT_EQ(Names(), (std::vector<std::string>{"lake/raw/_bizon_staging/out/job1-000001.parquet",
                                               "lake/raw/_bizon_staging/out/job1-000002.parquet",
                                               "lake/raw/out/deeper/other-000001.parquet",
                                               "lake/raw/out/old-000001.parquet"}));
  ASSERT_TRUE(destination->Finalize().ok());
  ASSERT_TRUE(destination->Finalize().ok());  // Repeated after a crash: the same outcome.
  EXPECT_EQ(Names(), (std::vector<std::string>{"lake/raw/out/deeper/other-000001.parquet",
                                               "lake/raw/out/job1-000001.parquet",
                                               "lake/raw/out/job1-000002.parquet"}));
  ASSERT_TRUE(destination->OnJobSucceeded().ok());
  EXPECT_FALSE(objects_.contains("lake/raw/_bizon_staging/out.job.json"));
}

TEST_F(ObjectPartStoreTest, StreamResumeDropsUnrecordedPartsAndPublishesRecordedOnes) {
  auto destination = Make(SyncMode::kStream, "job1");
  ASSERT_TRUE(destination->Open(Value()).ok());
  Value first = Write(*destination, Batch(0, 2));
  Write(*destination, Batch(2, 2));  // Never recorded.
  destination.reset();               // Died before OnCursorRecorded(first) too.
  EXPECT_EQ(Names(), (std::vector<std::string>{"lake/raw/_bizon_staging/out/job1-000001.parquet",
                                               "lake/raw/_bizon_staging/out/job1-000002.parquet"}));

  auto resumed = Make(SyncMode::kStream, "job1");
  ASSERT_TRUE(resumed->Open(first).ok());
  EXPECT_EQ(Names(), (std::vector<std::string>{"lake/raw/out/job1-000001.parquet"}));
  Value second = Write(*resumed, Batch(2, 3));
  ASSERT_TRUE(resumed->OnCursorRecorded(second).ok());
  ASSERT_TRUE(resumed->OnCursorRecorded(second).ok());
  EXPECT_EQ(Names(), (std::vector<std::string>{"lake/raw/out/job1-000001.parquet",
                                               "lake/raw/out/job1-000002.parquet"}));
}

TEST_F(ObjectPartStoreTest, IncrementalPublishesAtFinalizeAndAResumeRemovesWhatItsCursorMissed) {
  auto destination = Make(SyncMode::kIncremental, "job1");
  ASSERT_TRUE(destination->Open(Value()).ok());
  Value first = Write(*destination, Batch(0, 2));
  Write(*destination, Batch(2, 2));
  ASSERT_TRUE(destination->Finalize().ok());
  destination.reset();  // The last cursor never landed, though its part was published.

  auto resumed = Make(SyncMode::kIncremental, "job1");
  ASSERT_TRUE(resumed->Open(first).ok());
  EXPECT_EQ(Names(), (std::vector<std::string>{"lake/raw/out/job1-000001.parquet"}));
}

TEST_F(ObjectPartStoreTest, JsonPartsAreLinesPublishedTheSameWay) {
  auto destination = Make(SyncMode::kIncremental, "job1", PartFormat::kNdjson);
  ASSERT_TRUE(destination->Open(Value()).ok());
  Value state = Write(*destination, Batch(0, 3));
  EXPECT_EQ(state.ToJson(), R"({"parts":{"out":1}})");
  ASSERT_TRUE(destination->Finalize().ok());
  ASSERT_TRUE(destination->OnJobSucceeded().ok());
  EXPECT_EQ(Names(), (std::vector<std::string>{"lake/raw/out/job1-000001.json"}));
  const std::string& lines = objects_["lake/raw/out/job1-000001.json"];
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 3);
  EXPECT_NE(lines.find(R"("source_record_id":"2")"), std::string::npos) << lines;

  // A resume counts .json parts as it counts .parquet ones.
  auto resumed = Make(SyncMode::kIncremental, "job1", PartFormat::kNdjson);
  ASSERT_TRUE(
      resumed->Open(Value(Value::Map{{"parts", Value(Value::Map{{"out", Value(0)}})}})).ok());
  EXPECT_EQ(Names(), std::vector<std::string>{});
}

TEST(ObjectDestinationIdTest, RefusesNamesThatWouldNotBeCleanObjectNames) {
  EXPECT_TRUE(CheckObjectDestinationId("events/2024").ok());
  EXPECT_TRUE(CheckObjectDestinationId("a b;c").ok());
  for (std::string_view bad :
       {"", "/abs", "a//b", "a/../b", "./a", "a/", "_bizon_staging/x", "nul\x01"}) {
    EXPECT_FALSE(CheckObjectDestinationId(bad).ok()) << bad;
  }
  EXPECT_EQ(NormalizeObjectPrefix("//a/b//"), "a/b");
}

// Against the GCS emulator (scripts/test-servers.sh start gcs); skipped without it, except under
// CI=true, where the server must be there.
TEST(GcsObjectStoreEmulatorTest, PutsCopiesListsAndDeletes) {
  const char* host = std::getenv("STORAGE_EMULATOR_HOST");
  if (host == nullptr || *host == '\0') {
    BIZON_SKIP_OR_FAIL("STORAGE_EMULATOR_HOST is unset (scripts/test-servers.sh start gcs)");
  }
  const char* bucket_env = std::getenv("BIZON_GCS_BUCKET");
  const std::string bucket = bucket_env != nullptr ? bucket_env : "bizon-buffer";
  auto client = GcsClient::Make({.sleep = [](double) {}});
  ASSERT_TRUE(client) << client.error().ToString();
  ASSERT_TRUE((*client)->CreateBucket("test-project", bucket).ok());
  std::unique_ptr<ObjectStore> store = MakeGcsObjectStore(std::move(*client), bucket);

  const std::string prefix = "gcs-store-test/" + std::to_string(std::random_device{}()) + "/";
  ASSERT_TRUE(store->Put(prefix + "a", "alpha").ok());
  ASSERT_TRUE(store->Copy(prefix + "a", prefix + "sub/b").ok());
  ASSERT_TRUE(store->Copy(prefix + "a", prefix + "sub/b").ok());  // Replaces.
  auto copied = store->Get(prefix + "sub/b");
  ASSERT_TRUE(copied) << copied.error().ToString();
  EXPECT_EQ(*copied, "alpha");
  Status missing = store->Copy(prefix + "none", prefix + "c");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound) << missing.ToString();
  EXPECT_EQ(missing.failure_class(), FailureClass::kDestination);
  EXPECT_NE(missing.message().find("gs://" + bucket + "/" + prefix + "none"), std::string::npos)
      << missing.message();

  auto listed = store->List(prefix);
  ASSERT_TRUE(listed) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].name, prefix + "a");
  EXPECT_EQ((*listed)[1].name, prefix + "sub/b");
  EXPECT_EQ((*listed)[1].size, 5);
  for (const StoredObject& object : *listed) EXPECT_TRUE(store->Delete(object.name).ok());
  EXPECT_TRUE(store->Delete(prefix + "a").ok());  // Already gone: still fine.
  auto gone = store->Get(prefix + "a");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace bizon
