// The python module of a build configured with BIZON_WITH_PYTHON=OFF: the same declarations,
// without CPython. A pipeline that needs Python (a transform, a custom Python source, a rest_api
// response hook, a python_env) is refused naming the option; one that does not never notices.

#include <fmt/format.h>

#include "common/connector_families.h"
#include "python/hook_compiler.h"
#include "python/python_runtime.h"
#include "python/python_source.h"
#include "python/python_transforms.h"

namespace bizon {
namespace {

Status PythonNotBuilt(std::string_view what) { return NotBuiltError(what, "python"); }

}  // namespace

struct TransformChain::Impl {};

TransformChain::TransformChain(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TransformChain::~TransformChain() = default;

Result<std::unique_ptr<TransformChain>> TransformChain::Compile(const Value& transforms,
                                                                TransformOptions options) {
  if (transforms.is_list() && !transforms.AsList().empty()) {
    std::string where =
        options.file_name.empty() ? "transforms" : fmt::format("{}: transforms", options.file_name);
    return Fail(PythonNotBuilt(fmt::format("{}: a Python transform", where)));
  }
  return std::unique_ptr<TransformChain>(new TransformChain(std::make_unique<Impl>()));
}

// No transform compiles without Python, so a chain never has one to apply.
Status TransformChain::Apply(RecordBatch&) { return Status::Ok(); }

size_t TransformChain::size() const { return 0; }

Result<PythonSourceInfo> InspectPythonSource(const std::string& path, const std::string&) {
  return Fail(PythonNotBuilt(fmt::format("{}: a custom Python source", path)));
}

Result<std::unique_ptr<Source>> OpenPythonSource(const std::string& path, const SourceContext&,
                                                 const PythonSourceOptions&) {
  return Fail(PythonNotBuilt(fmt::format("{}: a custom Python source", path)));
}

// Nothing to start: no part of this binary runs Python.
Status StartPythonRuntime() { return Status::Ok(); }

void CancelPythonCalls() {}

Status UsePythonEnvironment(const std::string& path, const std::string& where) {
  if (path.empty()) return Status::Ok();
  return PythonNotBuilt(fmt::format("{}: a Python environment", where));
}

std::string ConfiguredPythonEnvironment() { return ""; }

Result<PythonHook> CompileEmbeddedPythonHook(const std::string& label, const std::string&,
                                             const std::string&) {
  return Fail(PythonNotBuilt(fmt::format("{}: a Python hook", label)));
}

}  // namespace bizon
