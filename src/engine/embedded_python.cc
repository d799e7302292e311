#include "engine/embedded_python.h"

#include <fmt/format.h>

#include "engine/settings.h"
#include "python/python_runtime.h"
#include "python/python_transforms.h"

namespace bizon {

Result<std::shared_ptr<TransformChain>> PrepareEmbeddedPython(const LoadedConfig& config) {
  if (const Value* python_env = config.config.FindPath("engine.runner.config.python_env");
      python_env != nullptr && python_env->is_string()) {
    const Value* written = config.raw.FindPath("engine.runner.config.python_env");
    int line = written != nullptr ? written->mark().line : 0;
    Status used = UsePythonEnvironment(
        python_env->AsString(),
        line > 0 ? fmt::format("{}:{}: engine.runner.config.python_env", config.file_name, line)
                 : fmt::format("{}: engine.runner.config.python_env", config.file_name));
    if (!used.ok()) return Fail(used.WithFailureClass(FailureClass::kConfig));
  }
  // The raw list: its nodes keep the YAML marks the errors point at.
  const Value* transforms = config.raw.Find("transforms");
  if (transforms == nullptr || !transforms->is_list() || transforms->AsList().empty()) {
    return std::shared_ptr<TransformChain>();
  }
  auto settings = ReadSettings(config);
  if (!settings) return Fail(settings.error().WithFailureClass(FailureClass::kConfig));
  auto compiled = TransformChain::Compile(
      *transforms, {.record_timeout = settings->python_timeout, .file_name = config.file_name});
  if (!compiled) return Fail(compiled.error().WithFailureClass(FailureClass::kConfig));
  return std::shared_ptr<TransformChain>(std::move(*compiled));
}

}  // namespace bizon
