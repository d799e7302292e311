#include "python/hook_compiler.h"

#include <memory>

#include "python/interpreter.h"

namespace bizon {
namespace {

// The compiled function, released under the GIL by whichever thread drops the last hook.
struct HookFunction {
  HookFunction() = default;
  HookFunction(const HookFunction&) = delete;
  HookFunction& operator=(const HookFunction&) = delete;
  ~HookFunction() {
    python::GilLock gil;
    function = pybind11::object();
  }
  pybind11::object function;
};

}  // namespace

Result<PythonHook> CompileEmbeddedPythonHook(const std::string& label, const std::string& code,
                                             const std::string& function) {
  BIZON_RETURN_IF_ERROR(python::EnsureInterpreter());
  auto hook = std::make_shared<HookFunction>();
  {
    python::GilLock gil;
    try {
      hook->function = python::Runtime().attr("compile_hook")(label, code, function);
    } catch (pybind11::error_already_set& error) {
      python::PythonError described = python::DescribeError(error);
      return Fail(python::ErrorStatus(described, "cannot compile " + label,
                                      StatusCode::kInvalidArgument, FailureClass::kConfig));
    }
  }
  return PythonHook([hook, label](const Value& argument) -> Result<Value> {
    python::GilLock gil;
    try {
      pybind11::object result = hook->function(python::ToPython(argument));
      return python::FromPython(result, label);
    } catch (pybind11::error_already_set& error) {
      python::PythonError described = python::DescribeError(error);
      return Fail(python::ErrorStatus(described, label, StatusCode::kFailedPrecondition,
                                      FailureClass::kSource));
    }
  });
}

}  // namespace bizon
