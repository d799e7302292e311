// The python module of a build without CPython (BIZON_WITH_PYTHON=OFF): what needs Python is
// refused naming the option, and what does not works.
#include <gtest/gtest.h>

#include "python/hook_compiler.h"
#include "python/python_runtime.h"
#include "python/python_source.h"
#include "python/python_transforms.h"

namespace bizon {
namespace {

constexpr std::string_view kOption = "-DBIZON_WITH_PYTHON=ON";

Value OneTransform() {
  return Value(Value::List{
      Value(Value::Map{{"label", Value("upper")}, {"python", Value("data['name'] = 'x'")}})});
}

TEST(WithoutPythonTest, NoTransformsGiveAChainThatLeavesBatchesAlone) {
  for (const Value& none : {Value(), Value(Value::List{})}) {
    auto chain = TransformChain::Compile(none);
    ASSERT_TRUE(chain.has_value()) << chain.error().message();
    EXPECT_EQ((*chain)->size(), 0u);
    RecordBatch batch;
    batch.Add("1", R"({"name":"a"})", 0, "");
    EXPECT_TRUE((*chain)->Apply(batch).ok());
    EXPECT_EQ(batch.size(), 1u);
  }
}

TEST(WithoutPythonTest, ATransformIsAConfigErrorNamingTheFileAndTheOption) {
  auto chain = TransformChain::Compile(OneTransform(), {.file_name = "pipeline.yml"});
  ASSERT_FALSE(chain.has_value());
  EXPECT_EQ(chain.error().failure_class(), FailureClass::kConfig);
  EXPECT_TRUE(chain.error().message().starts_with("pipeline.yml: transforms"))
      << chain.error().message();
  EXPECT_NE(chain.error().message().find(kOption), std::string::npos);
}

TEST(WithoutPythonTest, ACustomSourceAHookAndAnEnvironmentAreRefused) {
  auto inspected = InspectPythonSource("my_source.py", "mine");
  ASSERT_FALSE(inspected.has_value());
  EXPECT_NE(inspected.error().message().find("my_source.py"), std::string::npos);
  EXPECT_NE(inspected.error().message().find(kOption), std::string::npos);

  auto hook = CompileEmbeddedPythonHook("resources[0].response_actions[0]", "x = 1", "on_response");
  ASSERT_FALSE(hook.has_value());
  EXPECT_NE(hook.error().message().find(kOption), std::string::npos);

  EXPECT_TRUE(UsePythonEnvironment("", "p.yml:3: python_env").ok());
  Status env = UsePythonEnvironment("venv", "p.yml:3: engine.runner.config.python_env");
  EXPECT_FALSE(env.ok());
  EXPECT_TRUE(env.message().starts_with("p.yml:3: engine.runner.config.python_env"))
      << env.message();
  EXPECT_EQ(ConfiguredPythonEnvironment(), "");
}

}  // namespace
}  // namespace bizon
