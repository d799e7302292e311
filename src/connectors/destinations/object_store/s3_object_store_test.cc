// Against the real S3 server of scripts/test-servers.sh (versitygw, which checks signatures);
// skipped when BIZON_S3_ENDPOINT is not set.
#include "connectors/destinations/object_store/s3_object_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace bizon {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

class S3ObjectStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Env("BIZON_S3_ENDPOINT").empty()) GTEST_SKIP() << "BIZON_S3_ENDPOINT is not set";
    prefix_ = "unit-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/";
  }

  S3Settings Settings() const {
    return {.bucket = Env("BIZON_S3_BUCKET"),
            .endpoint = Env("BIZON_S3_ENDPOINT"),
            .access_key_id = Env("BIZON_S3_ACCESS_KEY_ID"),
            .secret_access_key = Env("BIZON_S3_SECRET_ACCESS_KEY"),
            .sleep = [](double) {}};
  }

  std::string prefix_;
};

TEST_F(S3ObjectStoreTest, PutsGetsCopiesListsAndDeletes) {
  auto store = MakeS3ObjectStore(Settings());
  ASSERT_TRUE(store.has_value()) << store.error().message();
  ObjectStore& s3 = **store;
  std::string odd = prefix_ + "dir with space/é+x=1&y.json";
  ASSERT_TRUE(s3.Put(odd, "{\"a\":1}\n").ok());
  std::string local = ::testing::TempDir() + "/s3-put-" + std::to_string(::getpid());
  std::ofstream(local) << std::string(3 << 20, 'x');
  ASSERT_TRUE(s3.PutFile(prefix_ + "big.bin", local).ok());
  std::remove(local.c_str());
  ASSERT_TRUE(s3.Copy(odd, prefix_ + "copy.json").ok());
  // A copy from a missing object is NotFound (ObjectPartStore::Publish relies on it to tell a
  // part published before a kill from a lost one), and leaves nothing at the target.
  Status missing = s3.Copy(prefix_ + "none.json", prefix_ + "never.json");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound) << missing.ToString();
  EXPECT_EQ(missing.failure_class(), FailureClass::kDestination);
  EXPECT_NE(missing.message().find("none.json"), std::string::npos) << missing.message();

  auto copied = s3.Get(prefix_ + "copy.json");
  ASSERT_TRUE(copied.has_value()) << copied.error().message();
  EXPECT_EQ(*copied, "{\"a\":1}\n");
  auto listed = s3.List(prefix_);
  ASSERT_TRUE(listed.has_value()) << listed.error().message();
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ((*listed)[0].name, prefix_ + "big.bin");
  EXPECT_EQ((*listed)[0].size, 3 << 20);
  EXPECT_EQ((*listed)[1].name, prefix_ + "copy.json");
  EXPECT_EQ((*listed)[2].name, odd);

  for (const auto& object : *listed) ASSERT_TRUE(s3.Delete(object.name).ok());
  EXPECT_TRUE(s3.Delete(odd).ok()) << "deleting a missing object succeeds";
  auto gone = s3.Get(odd);
  ASSERT_FALSE(gone.has_value());
  EXPECT_EQ(gone.error().code(), StatusCode::kNotFound);
  auto empty = s3.List(prefix_);
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());
}

TEST_F(S3ObjectStoreTest, WrongSecretIsRefusedAndNeverQuoted) {
  S3Settings settings = Settings();
  settings.secret_access_key = "not-the-secret-zz9";
  auto store = MakeS3ObjectStore(settings);
  ASSERT_TRUE(store.has_value());
  Status refused = (*store)->Put(prefix_ + "x", "x");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.failure_class(), FailureClass::kDestination);
  EXPECT_NE(refused.message().find("403"), std::string::npos) << refused.message();
  EXPECT_EQ(refused.message().find("not-the-secret-zz9"), std::string::npos);
}

TEST(S3SettingsTest, RefusesMissingBucketOrKeys) {
  auto no_bucket = MakeS3ObjectStore({.access_key_id = "a", .secret_access_key = "b"});
  ASSERT_FALSE(no_bucket.has_value());
  EXPECT_NE(no_bucket.error().message().find("bucket"), std::string::npos);
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  auto no_keys = MakeS3ObjectStore({.bucket = "b"});
  ASSERT_FALSE(no_keys.has_value());
  EXPECT_NE(no_keys.error().message().find("access_key_id"), std::string::npos);
}

}  // namespace
}  // namespace bizon
