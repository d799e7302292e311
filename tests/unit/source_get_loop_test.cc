// The sources that need no server, built the way a run builds them (pipeline file, validation,
// settings, the registry's factory), then read with Get() to the end, each pagination going
// through its stored JSON form as a resume would: every record once, and an end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>

#include "bizon/registry.h"
#include "cli/pipeline_declaration.h"
#include "config/pipeline_config.h"
#include "connectors/registration.h"
#include "engine/settings.h"

namespace bizon {
namespace {

struct Loop {
  size_t records = 0;
  size_t iterations = 0;
  std::set<std::string> ids;
};

class SourceGetLoopTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinConnectors(registry_).ok()); }

  Loop ReadAll(const std::string& source_yaml) {
    // One file per test: ctest runs the tests of this binary in parallel processes.
    std::string path = testing::TempDir() + "/source_get_loop_" +
                       testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                       std::to_string(getpid()) + ".yml";
    std::ofstream(path) << "name: get-loop\nsource:\n"
                        << source_yaml << "destination:\n  name: logger\n  config: {}\n";
    auto loaded = LoadPipelineConfig(path, DeclarePipeline(registry_), LoadOptions{});
    EXPECT_TRUE(loaded.has_value()) << loaded.error().ToString();
    if (!loaded) return {};
    auto settings = ReadSettings(*loaded);
    EXPECT_TRUE(settings.has_value()) << settings.error().ToString();
    if (!settings) return {};
    const SourceDescriptor* descriptor = registry_.FindSource(settings->key.source_name);
    EXPECT_NE(descriptor, nullptr);
    if (descriptor == nullptr) return {};
    auto source = descriptor->factory({.pipeline_name = settings->key.name,
                                       .stream = settings->key.stream_name,
                                       .sync_mode = settings->sync_mode,
                                       .config = settings->source_config});
    EXPECT_TRUE(source.has_value()) << source.error().ToString();
    if (!source) return {};
    Loop loop;
    Value pagination = Value::EmptyMap();
    while (loop.iterations < 1000) {
      auto page = (*source)->Get(pagination);
      EXPECT_TRUE(page.has_value()) << page.error().ToString();
      if (!page) break;
      ++loop.iterations;
      loop.records += page->records.size();
      for (size_t i = 0; i < page->records.size(); ++i) {
        EXPECT_TRUE(loop.ids.emplace(page->records.id(i)).second) << page->records.id(i);
        EXPECT_TRUE(Value::FromJson(page->records.payload(i)).has_value());
      }
      if (page->IsLast()) break;
      auto stored = Value::FromJson(page->next_pagination.ToJson());
      EXPECT_TRUE(stored.has_value());
      if (!stored) break;
      pagination = std::move(*stored);
    }
    return loop;
  }

  ConnectorRegistry registry_;
};

constexpr const char* kDummyAuth =
    "  authentication:\n    type: api_key\n    params:\n      token: a_token\n";

TEST_F(SourceGetLoopTest, DummyCreaturesEndAfterFiveRecords) {
  Loop loop = ReadAll(std::string("  name: dummy\n  stream: creatures\n") + kDummyAuth);
  EXPECT_EQ(loop.records, 5u);
  EXPECT_EQ(loop.ids.size(), 5u);
  EXPECT_GE(loop.iterations, 1u);
  EXPECT_LT(loop.iterations, 1000u);
}

TEST_F(SourceGetLoopTest, DummyPlantsEndAfterFiveRecords) {
  Loop loop = ReadAll(std::string("  name: dummy\n  stream: plants\n") + kDummyAuth);
  EXPECT_EQ(loop.records, 5u);
  EXPECT_LT(loop.iterations, 1000u);
}

TEST_F(SourceGetLoopTest, GeneratorPagesThroughCountRecords) {
  Loop loop = ReadAll("  name: generator\n  stream: records\n  count: 25\n  page_size: 10\n");
  EXPECT_EQ(loop.records, 25u);
  EXPECT_EQ(loop.ids.size(), 25u);
  EXPECT_EQ(loop.iterations, 3u);
}

TEST_F(SourceGetLoopTest, AnEmptyGeneratorEndsAtOnce) {
  Loop loop = ReadAll("  name: generator\n  stream: events\n  count: 0\n");
  EXPECT_EQ(loop.records, 0u);
  EXPECT_EQ(loop.iterations, 1u);
}

}  // namespace
}  // namespace bizon
