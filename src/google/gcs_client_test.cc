#include "google/gcs_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "google/google_test_support.h"
#include "testing/loopback_http_server.h"
#include "testing/test_servers.h"

namespace bizon {
namespace {

std::string RandomBytes(size_t size, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::string out(size, '\0');
  for (char& c : out) c = static_cast<char>(generator() & 0xff);
  return out;
}

TEST(GcsEmulatorEndpointTest, AddsHttpWithoutSchemeAndDropsTrailingSlash) {
  EXPECT_EQ(GcsEmulatorEndpoint(EnvOf({{"STORAGE_EMULATOR_HOST", "127.0.0.1:9023"}})),
            "http://127.0.0.1:9023");
  EXPECT_EQ(GcsEmulatorEndpoint(EnvOf({{"STORAGE_EMULATOR_HOST", "https://gcs.test:443/"}})),
            "https://gcs.test:443");
  EXPECT_EQ(GcsEmulatorEndpoint(EnvOf({})), std::nullopt);
  EXPECT_EQ(GcsEmulatorEndpoint(EnvOf({{"STORAGE_EMULATOR_HOST", ""}})), std::nullopt);
}

TEST(GcsClientTest, TheEmulatorVariableSelectsAnonymousRequests) {
  auto client = GcsClient::Make({.env = EnvOf({{"STORAGE_EMULATOR_HOST", "localhost:4443"}})});
  ASSERT_TRUE(client) << client.error().ToString();
  EXPECT_EQ((*client)->endpoint(), "http://localhost:4443");
  EXPECT_TRUE((*client)->emulator());
}

TEST(GcsClientTest, RefusesAChunkSizeThatIsNotA256KibMultiple) {
  auto client = GcsClient::Make({.credentials = MakeAnonymousGoogleCredentials(),
                                 .endpoint = "http://127.0.0.1:1",
                                 .chunk_size = 300000});
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(client.error().message().find("300000"), std::string::npos);
}

TEST(GcsObjectTest, ReadsTheApiResourceWithItsStringSizes) {
  auto object = GcsObject::FromJson(
      R"({"kind":"storage#object","bucket":"b","name":"a/b.avro","size":"1234",)"
      R"("generation":"17","contentType":"application/avro","md5Hash":"x","crc32c":"y"})");
  ASSERT_TRUE(object) << object.error().ToString();
  EXPECT_EQ(object->bucket, "b");
  EXPECT_EQ(object->name, "a/b.avro");
  EXPECT_EQ(object->size, 1234);
  EXPECT_EQ(object->generation, "17");
  EXPECT_EQ(object->content_type, "application/avro");
  EXPECT_FALSE(GcsObject::FromJson(R"({"size":"12x","name":"n"})"));
  EXPECT_FALSE(GcsObject::FromJson("[]"));
}

// tests/fakes/fake_gcs_resumable.py as a child process, on a port of its own.
class FakeGcs : public FakeProcess {
 public:
  FakeGcs() : FakeProcess("fake_gcs_resumable.py") {}

  void Drop(const std::string& offsets) { Control("drops", "{\"offsets\":" + offsets + "}"); }
  /// "PUT bytes 0-524287/1572987" per upload chunk or status query, in order.
  std::vector<std::string> Puts() {
    std::vector<std::string> out;
    Value report = Report();
    const Value* requests = report.Find("requests");
    if (requests == nullptr) return out;
    for (const Value& request : requests->AsList()) {
      if (request.GetString("method") == "PUT") {
        out.push_back(request.GetString("content_range"));
      }
    }
    return out;
  }
};

GcsClientOptions FakeOptions(const FakeGcs& fake) {
  return {.credentials = MakeAnonymousGoogleCredentials(),
          .endpoint = fake.url(),
          .resumable_threshold = 1024 * 1024,
          .chunk_size = 2 * kGcsChunkQuantum,
          .sleep = [](double) {}};
}

TEST(GcsClientFakeTest, ResumesFromWhatTheServerPersistedAfterDroppedConnections) {
  FakeGcs fake;
  ASSERT_FALSE(fake.url().empty()) << "the fake did not start";
  auto client = GcsClient::Make(FakeOptions(fake));
  ASSERT_TRUE(client) << client.error().ToString();
  const std::string data = RandomBytes(3 * 512 * 1024 + 123, 1);  // 1572987 bytes.
  // The first chunk breaks off after 300000 bytes (262144 kept), the third after 1200000
  // (1048576 kept): each time the client must ask, then resend from what was kept.
  fake.Drop("[300000, 1200000]");

  auto object = (*client)->Upload("bkt", "dir/big.bin", data);
  ASSERT_TRUE(object) << object.error().ToString();
  EXPECT_EQ(object->size, static_cast<int64_t>(data.size()));
  EXPECT_EQ(object->name, "dir/big.bin");
  EXPECT_EQ(fake.Puts(), (std::vector<std::string>{
                             "bytes 0-524287/1572987",         // dropped, 262144 kept
                             "bytes */1572987",                // status: bytes=0-262143
                             "bytes 262144-786431/1572987",    // 308
                             "bytes 786432-1310719/1572987",   // dropped, 1048576 kept
                             "bytes */1572987",                // status: bytes=0-1048575
                             "bytes 1048576-1572863/1572987",  // 308
                             "bytes 1572864-1572986/1572987",  // 200, the object
                         }));
  auto downloaded = (*client)->Download("bkt", "dir/big.bin");
  ASSERT_TRUE(downloaded) << downloaded.error().ToString();
  EXPECT_TRUE(*downloaded == data);
  EXPECT_EQ(fake.Violations(), "[]");
}

TEST(GcsClientFakeTest, ALaterProcessContinuesAnUploadFromItsSessionUri) {
  FakeGcs fake;
  ASSERT_FALSE(fake.url().empty()) << "the fake did not start";
  GcsClientOptions options = FakeOptions(fake);
  options.max_resumes = 0;  // The first client gives up at the first drop, like a crash.
  auto first = GcsClient::Make(options);
  ASSERT_TRUE(first);
  const std::string data = RandomBytes(5 * kGcsChunkQuantum, 2);
  auto session_uri = (*first)->StartResumableUpload(
      "bkt", "resumed.bin", static_cast<int64_t>(data.size()), "application/octet-stream");
  ASSERT_TRUE(session_uri) << session_uri.error().ToString();
  fake.Drop("[800000]");
  auto source = MakeGcsMemorySource(data);
  auto failed = (*first)->ResumeUpload(*session_uri, *source);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code(), StatusCode::kUnavailable);

  auto second = GcsClient::Make(FakeOptions(fake));
  ASSERT_TRUE(second);
  auto status = (*second)->QueryResumableUpload(*session_uri, static_cast<int64_t>(data.size()));
  ASSERT_TRUE(status) << status.error().ToString();
  EXPECT_EQ(status->persisted, 3 * kGcsChunkQuantum);  // 524288 sent before, 262144 of the drop.
  auto object = (*second)->ResumeUpload(*session_uri, *source);
  ASSERT_TRUE(object) << object.error().ToString();
  EXPECT_EQ(object->size, static_cast<int64_t>(data.size()));
  EXPECT_EQ(fake.Puts(), (std::vector<std::string>{
                             "bytes */1310720",               // first: where does it stand?
                             "bytes 0-524287/1310720",        // 308
                             "bytes 524288-1048575/1310720",  // dropped, 786432 kept
                             "bytes */1310720",               // QueryResumableUpload
                             "bytes */1310720",               // ResumeUpload asks first
                             "bytes 786432-1310719/1310720",  // 200
                         }));
  auto downloaded = (*second)->Download("bkt", "resumed.bin");
  ASSERT_TRUE(downloaded);
  EXPECT_TRUE(*downloaded == data);
  auto gone = (*second)->QueryResumableUpload(*session_uri + "x", 1);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), StatusCode::kNotFound);
  EXPECT_EQ(fake.Violations(), "[]");
}

TEST(GcsClientFakeTest, MultipartUploadListPagesAndDelete) {
  FakeGcs fake;
  ASSERT_FALSE(fake.url().empty()) << "the fake did not start";
  auto client = GcsClient::Make(FakeOptions(fake));
  ASSERT_TRUE(client);
  for (int i = 0; i < 5; ++i) {
    auto object = (*client)->Upload("bkt", "p/o" + std::to_string(i), "row " + std::to_string(i));
    ASSERT_TRUE(object) << object.error().ToString();
    EXPECT_EQ(object->size, 5);
  }
  ASSERT_TRUE((*client)->Upload("bkt", "other", "x"));
  auto empty = (*client)->Upload("bkt", "p/empty", "");
  ASSERT_TRUE(empty) << empty.error().ToString();
  EXPECT_EQ(empty->size, 0);

  auto page = (*client)->ListPage("bkt", {.prefix = "p/", .max_results = 2});
  ASSERT_TRUE(page) << page.error().ToString();
  EXPECT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->next_page_token, "2");
  auto all = (*client)->List("bkt", "p/", 2);
  ASSERT_TRUE(all) << all.error().ToString();
  std::vector<std::string> names;
  for (const GcsObject& object : *all) names.push_back(object.name);
  EXPECT_EQ(names, (std::vector<std::string>{"p/empty", "p/o0", "p/o1", "p/o2", "p/o3", "p/o4"}));

  EXPECT_TRUE((*client)->Delete("bkt", "p/o1").ok());
  Status again = (*client)->Delete("bkt", "p/o1");
  EXPECT_EQ(again.code(), StatusCode::kNotFound);
  auto missing = (*client)->Download("bkt", "p/o1");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_EQ(fake.Violations(), "[]");
}

TEST(GcsClientCopyTest, ContinuesARewriteWithItsTokenUntilItIsDone) {
  testing_support::LoopbackHttpServer server;
  const std::string path = "/storage/v1/b/bkt/o/src.parquet/rewriteTo/b/bkt/o/dst.parquet";
  server.ExpectJson("POST", path,
                    R"({"kind":"storage#rewriteResponse","done":false,)"
                    R"("totalBytesRewritten":"1","rewriteToken":"t/1"})");
  server.ExpectJson("POST", path,
                    R"({"kind":"storage#rewriteResponse","done":true,"totalBytesRewritten":"3",)"
                    R"("resource":{"bucket":"bkt","name":"dst.parquet","size":"3"}})");
  server.Expect("POST", "/storage/v1/b/bkt/o/gone.parquet/rewriteTo/b/bkt/o/dst.parquet",
                testing_support::LoopbackResponse::Json(R"({"error":{"code":404}})", 404));
  auto client = GcsClient::Make({.credentials = MakeAnonymousGoogleCredentials(),
                                 .endpoint = server.url(),
                                 .sleep = [](double) {}});
  ASSERT_TRUE(client) << client.error().ToString();

  auto copied = (*client)->Copy("bkt", "src.parquet", "bkt", "dst.parquet");
  ASSERT_TRUE(copied) << copied.error().ToString();
  EXPECT_EQ(copied->name, "dst.parquet");
  EXPECT_EQ(copied->size, 3);
  std::vector<testing_support::LoopbackRequest> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].QueryValue("rewriteToken"), std::nullopt);
  EXPECT_EQ(requests[1].QueryValue("rewriteToken"), "t/1");

  auto missing = (*client)->Copy("bkt", "gone.parquet", "bkt", "dst.parquet");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
}

// Against the real emulator (scripts/test-servers.sh start gcs); skipped without it, except
// under CI=true, where the server must be there.
TEST(GcsClientEmulatorTest, UploadsDownloadsListsAndDeletes) {
  const char* host = std::getenv("STORAGE_EMULATOR_HOST");
  if (host == nullptr || *host == '\0') {
    BIZON_SKIP_OR_FAIL("STORAGE_EMULATOR_HOST is unset (scripts/test-servers.sh start gcs)");
  }
  const char* bucket_env = std::getenv("BIZON_GCS_BUCKET");
  const std::string bucket = bucket_env != nullptr ? bucket_env : "bizon-buffer";
  auto client = GcsClient::Make(
      {.resumable_threshold = 1024 * 1024, .chunk_size = kGcsChunkQuantum, .sleep = [](double) {}});
  ASSERT_TRUE(client) << client.error().ToString();
  ASSERT_TRUE((*client)->emulator());
  ASSERT_TRUE((*client)->CreateBucket("test-project", bucket).ok());

  const std::string prefix = "gcs-client-test/" + std::to_string(std::random_device{}()) + "/";
  const std::string small = "{\"a\":1}\n{\"a\":2}\n";
  const std::string big = RandomBytes(4 * kGcsChunkQuantum + 1000, 3);
  auto small_object = (*client)->Upload(bucket, prefix + "small.ndjson", small);
  ASSERT_TRUE(small_object) << small_object.error().ToString();
  EXPECT_EQ(small_object->size, static_cast<int64_t>(small.size()));

  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("gcs-client-test-" + std::to_string(getpid()));
  std::ofstream(file, std::ios::binary) << big;
  auto big_object = (*client)->UploadFile(bucket, prefix + "big.bin", file.string());
  std::filesystem::remove(file);
  ASSERT_TRUE(big_object) << big_object.error().ToString();
  EXPECT_EQ(big_object->size, static_cast<int64_t>(big.size()));

  auto small_back = (*client)->Download(bucket, prefix + "small.ndjson");
  ASSERT_TRUE(small_back) << small_back.error().ToString();
  EXPECT_EQ(*small_back, small);
  auto big_back = (*client)->Download(bucket, prefix + "big.bin");
  ASSERT_TRUE(big_back) << big_back.error().ToString();
  EXPECT_TRUE(*big_back == big);

  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE((*client)->Upload(bucket, prefix + "page/" + std::to_string(i), "x"));
  }
  auto listed = (*client)->List(bucket, prefix, 2);
  ASSERT_TRUE(listed) << listed.error().ToString();
  std::vector<std::string> names;
  for (const GcsObject& object : *listed) names.push_back(object.name.substr(prefix.size()));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names,
            (std::vector<std::string>{"big.bin", "page/0", "page/1", "page/2", "small.ndjson"}));

  for (const std::string& name : names) {
    EXPECT_TRUE((*client)->Delete(bucket, prefix + name).ok()) << name;
  }
  auto gone = (*client)->GetObject(bucket, prefix + "small.ndjson");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), StatusCode::kNotFound);
  auto after = (*client)->List(bucket, prefix);
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->empty());
}

}  // namespace
}  // namespace bizon
