#include "engine/embedded_python.h"

#include <fmt/format.h>

#include "common/python_hooks.h"
#include "engine/engine_options.h"
#include "python/hook_compiler.h"
#include "python/python_runtime.h"
#include "python/python_transforms.h"

namespace bizon {

Result<std::shared_ptr<TransformChain>> PrepareEmbeddedPython(const LoadedConfig& config) {
  const Value* runner = config.config.FindPath("engine.runner");
  auto options = ReadRunnerOptions(runner != nullptr ? *runner : Value());
  if (!options) return Fail(options.error().WithFailureClass(FailureClass::kConfig));
  const Value* written = config.raw.FindPath("engine.runner.config.python_env");
  int line = written != nullptr ? written->mark().line : 0;
  Status used = UsePythonEnvironment(
      options->python_env,
      line > 0 ? fmt::format("{}:{}: engine.runner.config.python_env", config.file_name, line)
               : fmt::format("{}: engine.runner.config.python_env", config.file_name));
  if (!used.ok()) return Fail(used.WithFailureClass(FailureClass::kConfig));
  // The raw list: its nodes keep the YAML marks the errors point at.
  const Value* transforms = config.raw.Find("transforms");
  if (transforms == nullptr || !transforms->is_list() || transforms->AsList().empty()) {
    return std::shared_ptr<TransformChain>();
  }
  auto compiled = TransformChain::Compile(
      *transforms, {.record_timeout = options->python_timeout, .file_name = config.file_name});
  if (!compiled) return Fail(compiled.error().WithFailureClass(FailureClass::kConfig));
  return std::shared_ptr<TransformChain>(std::move(*compiled));
}

void RegisterEmbeddedPythonHooks() { SetPythonHookCompiler(CompileEmbeddedPythonHook); }

}  // namespace bizon
