#include "engine/engine_options.h"

#include <gtest/gtest.h>

#include "config/validator.h"
#include "engine/backend/backend_options.h"
#include "engine/queue/queue_options.h"

namespace bizon {
namespace {

/// `engine:` as validation fills it in from the declaration, for a file without one.
Value ValidatedEngine(Value engine) {
  ValidationResult result = ValidateConfig(Value(Value::Map{{"engine", std::move(engine)}}),
                                           Option::Object("", {EngineSection().field}));
  EXPECT_FALSE(result.has_errors()) << result.ErrorText("t.yml");
  return *result.normalized.Find("engine");
}

TEST(EngineOptionsTest, ReadersTakeTheDefaultsOfTheDeclarationOnly) {
  // The same values whether validation filled the block in or the readers fell back on the
  // declaration themselves: there is no second default.
  Value validated = ValidatedEngine(Value::EmptyMap());
  for (const Value& runner : {*validated.Find("runner"), Value()}) {
    auto options = ReadRunnerOptions(runner);
    ASSERT_TRUE(options.has_value()) << options.error().message();
    EXPECT_EQ(options->max_workers, 2);
    EXPECT_EQ(options->python_timeout, std::chrono::milliseconds(300'000));
    EXPECT_EQ(options->python_env, "");
  }
  for (const Value& queue : {*validated.Find("queue"), Value()}) {
    auto limits = ReadQueueLimits(queue);
    ASSERT_TRUE(limits.has_value()) << limits.error().message();
    EXPECT_EQ(limits->max_records, 1'000'000);
    EXPECT_EQ(limits->max_bytes, 16 * 1024 * 1024);
    EXPECT_EQ(limits->max_iterations, 0);
  }
  for (const Value& backend : {*validated.Find("backend"), Value()}) {
    EXPECT_EQ(BackendType(backend), "sqlite");
    auto every = ReadSyncCursorEvery(backend);
    ASSERT_TRUE(every.has_value()) << every.error().message();
    EXPECT_EQ(*every, 10);
  }
}

TEST(EngineOptionsTest, ReadersTakeWhatTheConfigSets) {
  Value engine = ValidatedEngine(Value(Value::Map{
      {"runner", Value(Value::Map{{"config", Value(Value::Map{{"max_workers", Value(5)},
                                                              {"python_timeout", Value(1.5)},
                                                              {"python_env", Value("venv")}})}})},
      {"queue", Value(Value::Map{{"config", Value(Value::Map{{"max_nb_messages", Value(7)},
                                                             {"max_bytes", Value(4096)}})}})},
      {"backend",
       Value(Value::Map{{"type", Value("sqlite_in_memory")},
                        {"config", Value(Value::Map{{"database", Value("d")},
                                                    {"schema", Value("s")},
                                                    {"syncCursorInDBEvery", Value(3)}})}})}}));
  auto runner = ReadRunnerOptions(*engine.Find("runner"));
  ASSERT_TRUE(runner.has_value());
  EXPECT_EQ(runner->max_workers, 5);
  EXPECT_EQ(runner->python_timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(runner->python_env, "venv");
  auto limits = ReadQueueLimits(*engine.Find("queue"));
  ASSERT_TRUE(limits.has_value());
  EXPECT_EQ(limits->max_records, 7);
  EXPECT_EQ(limits->max_bytes, 4096);
  EXPECT_EQ(BackendType(*engine.Find("backend")), "sqlite_in_memory");
  EXPECT_EQ(ReadSyncCursorEvery(*engine.Find("backend")).value_or(0), 3);
}

TEST(EngineOptionsTest, ANetworkQueueHasNoInProcessLimits) {
  auto limits = ReadQueueLimits(Value(Value::Map{{"type", Value("kafka")}}));
  ASSERT_TRUE(limits.has_value());
  EXPECT_EQ(limits->max_records, 0);
  EXPECT_EQ(limits->max_bytes, 0);
}

}  // namespace
}  // namespace bizon
