// A source built the way `bizon run` builds it, from the `source:` block of a pipeline file: the
// file is written to the test's temporary directory, loaded and validated (defaults filled in),
// read into settings and handed to the registry's factory. And the engine's Get() loop over it,
// each pagination going through its stored JSON form as a resumed run would.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/registry.h"
#include "bizon/source.h"
#include "bizon/status.h"
#include "cli/pipeline_declaration.h"
#include "config/pipeline_config.h"
#include "engine/settings.h"

namespace bizon::testing_support {

/// The source of a pipeline whose `source:` block is `source_yaml` (its keys indented by two
/// spaces), with a logger destination.
inline Result<std::unique_ptr<Source>> MakeSourceFromYaml(const ConnectorRegistry& registry,
                                                          std::string_view source_yaml) {
  // One file per call: ctest runs the tests of a binary in parallel processes.
  static std::atomic<int> files{0};
  std::string test_name = testing::UnitTest::GetInstance()->current_test_info()->name();
  for (char& c : test_name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '_';  // Parameterized: "a/b".
  }
  std::string path = testing::TempDir() + "/pipeline_source_" + test_name + "_" +
                     std::to_string(::getpid()) + "_" + std::to_string(files++) + ".yml";
  std::ofstream(path) << "name: pipeline-source\nsource:\n"
                      << source_yaml << "destination:\n  name: logger\n  config: {}\n";
  auto loaded = LoadPipelineConfig(path, DeclarePipeline(registry), LoadOptions{});
  ::unlink(path.c_str());
  if (!loaded) return Fail(loaded.error());
  BIZON_ASSIGN_OR_RETURN(PipelineSettings settings, ReadSettings(*loaded));
  const SourceDescriptor* descriptor = registry.FindSource(settings.key.source_name);
  if (descriptor == nullptr || !descriptor->factory) {
    return Fail(InvalidArgumentError("no factory for source " + settings.key.source_name));
  }
  return descriptor->factory({.pipeline_name = settings.key.name,
                              .stream = settings.key.stream_name,
                              .sync_mode = settings.sync_mode,
                              .config = settings.source_config});
}

struct GetLoopResult {
  /// Every iteration, in order; the loop stops after the first one marked last.
  std::vector<SourceIteration> iterations;
  /// The first failed Get(), if any.
  Status error;

  size_t records() const {
    size_t count = 0;
    for (const SourceIteration& iteration : iterations) count += iteration.records.size();
    return count;
  }
  /// Every record id, in order.
  std::vector<std::string> ids() const {
    std::vector<std::string> out;
    for (const SourceIteration& iteration : iterations) {
      for (size_t i = 0; i < iteration.records.size(); ++i)
        out.emplace_back(iteration.records.id(i));
    }
    return out;
  }
  /// The loop ended without an error after `count` iterations, every one but the last saying
  /// there is more and the last marked last.
  void ExpectEndsAfter(size_t count) const {
    ASSERT_TRUE(error.ok()) << error.ToString();
    ASSERT_EQ(iterations.size(), count);
    for (size_t i = 0; i + 1 < count; ++i) {
      EXPECT_FALSE(iterations[i].IsLast()) << "iteration " << i;
    }
    if (count > 0) {
      EXPECT_TRUE(iterations.back().IsLast());
    }
  }
  /// Every record payload, in order.
  std::vector<std::string> payloads() const {
    std::vector<std::string> out;
    for (const SourceIteration& iteration : iterations) {
      for (size_t i = 0; i < iteration.records.size(); ++i) {
        out.emplace_back(iteration.records.payload(i));
      }
    }
    return out;
  }
};

/// Calls Get() from an empty pagination until an iteration is marked last, a call fails, or
/// `limit` iterations were read.
inline GetLoopResult ReadToEnd(Source& source, size_t limit = 1000) {
  GetLoopResult result;
  Value pagination = Value::EmptyMap();
  while (result.iterations.size() < limit) {
    auto page = source.Get(pagination);
    if (!page) {
      result.error = page.error();
      break;
    }
    result.iterations.push_back(std::move(*page));
    const SourceIteration& last = result.iterations.back();
    if (last.IsLast()) break;
    auto stored = Value::FromJson(last.next_pagination.ToJson());
    if (!stored) {
      result.error = stored.error();
      break;
    }
    pagination = std::move(*stored);
  }
  return result;
}

}  // namespace bizon::testing_support
