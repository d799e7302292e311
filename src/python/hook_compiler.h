// The embedded interpreter as the compiler of the Python hooks connectors take from a config
// (common/python_hooks.h).
#pragma once

#include <string>

#include "common/python_hooks.h"

namespace bizon {

/// Compiles a hook in the embedded interpreter, starting it if needed. A syntax error, or code
/// that defines no such function, is a config error with the code's line; a call that raises is a
/// source error with the traceback.
Result<PythonHook> CompileEmbeddedPythonHook(const std::string& label, const std::string& code,
                                             const std::string& function);

}  // namespace bizon
