// Hooks written in Python inside a pipeline's config, for connectors that do not link the
// embedded interpreter (rest_api's response actions).
//
// A connector asks CompilePythonHook() for a function; what compiles it is registered once at
// start-up by the binary when it embeds Python (engine/embedded_python.h,
// RegisterPythonHookCompiler). In a process that registered none, compiling fails with a clear
// error instead of the hook being skipped.
//
// Thread-safety: SetPythonHookCompiler() before any connector is made; the rest from any thread.
// A compiled hook may be called from several threads: the interpreter runs one call at a time.
#pragma once

#include <functional>
#include <string>

#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

/// One argument in, one value out, both JSON-shaped. An exception in Python is an error with its
/// traceback; a result that is not JSON-shaped is an error naming the hook.
using PythonHook = std::function<Result<Value>(const Value& argument)>;

/// Compiles `code` (a Python module's text, common indentation removed) and returns its
/// top-level function `function`. `label` names the code in tracebacks and messages.
using PythonHookCompiler = std::function<Result<PythonHook>(
    const std::string& label, const std::string& code, const std::string& function)>;

void SetPythonHookCompiler(PythonHookCompiler compiler);

/// Through the registered compiler; without one, a config error saying the binary cannot run
/// Python hooks.
Result<PythonHook> CompilePythonHook(const std::string& label, const std::string& code,
                                     const std::string& function);

}  // namespace bizon
