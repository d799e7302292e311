// Where the embedded interpreter's packages come from: bizon's private site directory and the
// user's virtualenv (engine.runner.config.python_env, else VIRTUAL_ENV). Internal to src/python/;
// the engine uses UsePythonEnvironment() in python_runtime.h. No Python header: the checks here
// read files only, so they run (and are tested) without an interpreter.
#pragma once

#include <string>
#include <string_view>

#include "bizon/status.h"

namespace bizon::python {

/// "3.11": the major.minor of the Python bizon is built against and embeds.
std::string EmbeddedPythonVersion();

/// A virtualenv the custom sources and transforms import from, checked.
struct PythonEnvironment {
  std::string root;           // Absolute path of the environment.
  std::string site_packages;  // <root>/lib/python3.X/site-packages.
  std::string version;        // "3.11", from pyvenv.cfg (or the lib/python3.X folder).
  /// pyvenv.cfg's include-system-site-packages: keep the system's dist-packages on sys.path.
  bool include_system_site_packages = false;
};

/// Checks that `path` is a virtualenv of the embedded Python's minor version and finds its
/// site-packages. `where` opens every error ("pipeline.yml:7: engine.runner.config.python_env"
/// or "VIRTUAL_ENV"). Errors (kInvalidArgument, failure class config): not a directory, neither
/// pyvenv.cfg nor lib/python3.X, another minor version (naming both versions), no
/// site-packages.
Result<PythonEnvironment> InspectPythonEnvironment(const std::string& path, std::string_view where);

/// bizon's own packages (src/python/requirements.txt) for the executable at `executable`: its
/// folder's `python-site` (a build tree) or `../lib/bizon/python` (after `cmake --install`).
/// Empty when neither exists.
std::string FindPrivateSite(const std::string& executable);

/// What StartInterpreter arranges sys.path from.
struct PythonPathPlan {
  std::string private_site;  // Empty: none found (a warning says so).
  bool has_environment = false;
  PythonEnvironment environment;
};

/// The plan for this process: the environment given to UsePythonEnvironment(), else
/// $VIRTUAL_ENV, else none; the private site beside /proc/self/exe. Called once, when the
/// interpreter starts; from then on UsePythonEnvironment() refuses another environment.
Result<PythonPathPlan> PlanPythonPath();

}  // namespace bizon::python
