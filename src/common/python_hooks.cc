#include "common/python_hooks.h"

#include <fmt/format.h>

#include <mutex>
#include <utility>

namespace bizon {
namespace {

std::mutex& CompilerMutex() {
  static std::mutex mutex;
  return mutex;
}

PythonHookCompiler& Compiler() {
  static PythonHookCompiler compiler;
  return compiler;
}

}  // namespace

void SetPythonHookCompiler(PythonHookCompiler compiler) {
  std::lock_guard<std::mutex> lock(CompilerMutex());
  Compiler() = std::move(compiler);
}

Result<PythonHook> CompilePythonHook(const std::string& label, const std::string& code,
                                     const std::string& function) {
  PythonHookCompiler compiler;
  {
    std::lock_guard<std::mutex> lock(CompilerMutex());
    compiler = Compiler();
  }
  if (!compiler) {
    return Fail(Status(StatusCode::kFailedPrecondition,
                       fmt::format("{}: this bizon binary runs no Python, so it cannot run a "
                                   "Python hook",
                                   label),
                       FailureClass::kConfig));
  }
  return compiler(label, code, function);
}

}  // namespace bizon
