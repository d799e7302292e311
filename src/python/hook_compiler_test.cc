#include "python/hook_compiler.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "common/python_hooks.h"

namespace bizon {
namespace {

PythonHook Compile(const std::string& code) {
  auto hook = CompileEmbeddedPythonHook("test hook", code, "on_response");
  EXPECT_TRUE(hook.has_value()) << hook.error().message();
  return hook ? *hook : PythonHook();
}

TEST(PythonHookTest, CallsTheFunctionWithJsonShapedValuesBothWays) {
  PythonHook hook = Compile(R"(
import json

def on_response(response):
    body = json.loads(response["body"])
    return {"seen": response["status_code"], "items": body["items"][::-1]}
)");
  ASSERT_TRUE(hook);
  Value argument = Value::EmptyMap();
  argument.Set("status_code", Value(200));
  argument.Set("body", Value(R"({"items": [1, 2, 3]})"));
  auto answer = hook(argument);
  ASSERT_TRUE(answer.has_value()) << answer.error().message();
  EXPECT_EQ(answer->ToJson(), R"({"seen":200,"items":[3,2,1]})");
}

TEST(PythonHookTest, NoneComesBackAsNull) {
  PythonHook hook = Compile("def on_response(response):\n    return None\n");
  ASSERT_TRUE(hook);
  auto answer = hook(Value::EmptyMap());
  ASSERT_TRUE(answer.has_value()) << answer.error().message();
  EXPECT_TRUE(answer->is_null());
}

TEST(PythonHookTest, IndentedCodeIsDedentedAsTransformsAre) {
  PythonHook hook = Compile("    def on_response(response):\n        return 'retry'\n");
  ASSERT_TRUE(hook);
  auto answer = hook(Value::EmptyMap());
  ASSERT_TRUE(answer.has_value()) << answer.error().message();
  EXPECT_EQ(answer->AsString(), "retry");
}

TEST(PythonHookTest, ASyntaxErrorIsAConfigErrorNamingTheHook) {
  auto hook = CompileEmbeddedPythonHook("hook H", "def on_response(r)\n  pass\n", "on_response");
  ASSERT_FALSE(hook.has_value());
  EXPECT_EQ(hook.error().failure_class(), FailureClass::kConfig);
  EXPECT_NE(hook.error().message().find("cannot compile hook H"), std::string::npos)
      << hook.error().message();
  EXPECT_NE(hook.error().message().find("SyntaxError"), std::string::npos);
}

TEST(PythonHookTest, CodeWithoutTheFunctionIsRefused) {
  auto hook = CompileEmbeddedPythonHook("hook H", "x = 1\n", "on_response");
  ASSERT_FALSE(hook.has_value());
  EXPECT_NE(hook.error().message().find("hook H: the code defines no function `on_response`"),
            std::string::npos)
      << hook.error().message();
}

TEST(PythonHookTest, AnExceptionIsASourceErrorWithItsTraceback) {
  PythonHook hook = Compile("def on_response(response):\n    return response['missing']\n");
  ASSERT_TRUE(hook);
  auto answer = hook(Value::EmptyMap());
  ASSERT_FALSE(answer.has_value());
  EXPECT_EQ(answer.error().failure_class(), FailureClass::kSource);
  EXPECT_NE(answer.error().message().find("test hook: KeyError: 'missing'"), std::string::npos)
      << answer.error().message();
  EXPECT_NE(answer.error().message().find("<test hook>"), std::string::npos)
      << answer.error().message();
}

TEST(PythonHookTest, AnAnswerThatIsNotJsonShapedIsAnError) {
  PythonHook hook = Compile("def on_response(response):\n    return {1, 2}\n");
  ASSERT_TRUE(hook);
  auto answer = hook(Value::EmptyMap());
  ASSERT_FALSE(answer.has_value());
  EXPECT_NE(answer.error().message().find("test hook"), std::string::npos)
      << answer.error().message();
}

TEST(PythonHookTest, ThreadsCallOneHookAtOnceSafely) {
  PythonHook hook = Compile("def on_response(response):\n    return response['n'] * 2\n");
  ASSERT_TRUE(hook);
  std::vector<std::thread> threads;
  std::vector<int64_t> results(8, 0);
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&hook, &results, t] {
      for (int i = 0; i < 50; ++i) {
        Value argument = Value::EmptyMap();
        argument.Set("n", Value(static_cast<int64_t>(t)));
        auto answer = hook(argument);
        if (answer) results[t] += answer->AsInteger();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t t = 0; t < results.size(); ++t) EXPECT_EQ(results[t], 100 * static_cast<int64_t>(t));
}

TEST(PythonHookTest, WithoutARegisteredCompilerAHookIsAClearConfigError) {
  SetPythonHookCompiler(nullptr);
  auto hook = CompilePythonHook("resource 'r' response_actions[0]", "def on_response(r): pass",
                                "on_response");
  ASSERT_FALSE(hook.has_value());
  EXPECT_EQ(hook.error().failure_class(), FailureClass::kConfig);
  EXPECT_NE(hook.error().message().find("resource 'r' response_actions[0]: this bizon binary "
                                        "runs no Python"),
            std::string::npos)
      << hook.error().message();
  SetPythonHookCompiler(CompileEmbeddedPythonHook);
  EXPECT_TRUE(CompilePythonHook("h", "def on_response(r): pass", "on_response").has_value());
}

}  // namespace
}  // namespace bizon
