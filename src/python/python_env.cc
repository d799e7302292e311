#include "python/python_env.h"

#include <fmt/format.h>
#include <patchlevel.h>  // PY_MAJOR_VERSION and PY_MINOR_VERSION only: no interpreter needed.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <system_error>
#include <vector>

#include "python/python_runtime.h"

namespace bizon::python {
namespace {

namespace fs = std::filesystem;

// What UsePythonEnvironment() chose, and whether the interpreter already started with it.
struct EnvironmentChoice {
  std::mutex mutex;
  std::string path;  // Absolute; empty: none configured.
  std::string where;
  bool planned = false;
};

EnvironmentChoice& Choice() {
  static EnvironmentChoice* choice = new EnvironmentChoice();  // Leaked: read until exit.
  return *choice;
}

std::string Trim(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return "";
  size_t end = text.find_last_not_of(" \t\r");
  return std::string(text.substr(begin, end - begin + 1));
}

// "3.12.1" or "3.12.1.final.0" (virtualenv's version_info) -> "3.12".
std::string MajorMinor(const std::string& version) {
  size_t first = version.find('.');
  if (first == std::string::npos) return version;
  size_t second = version.find('.', first + 1);
  return second == std::string::npos ? version : version.substr(0, second);
}

struct VenvConfig {
  bool found = false;
  std::string version;
  bool include_system_site_packages = false;
};

// pyvenv.cfg: `key = value` lines, written by `python -m venv` and by virtualenv.
VenvConfig ReadVenvConfig(const fs::path& root) {
  VenvConfig config;
  std::ifstream file(root / "pyvenv.cfg");
  if (!file) return config;
  config.found = true;
  std::string line;
  while (std::getline(file, line)) {
    size_t equals = line.find('=');
    if (equals == std::string::npos) continue;
    std::string key = Trim(std::string_view(line).substr(0, equals));
    std::string value = Trim(std::string_view(line).substr(equals + 1));
    if (key == "version" || key == "version_info") {
      if (config.version.empty() || key == "version") config.version = MajorMinor(value);
    } else if (key == "include-system-site-packages") {
      config.include_system_site_packages = value == "true" || value == "True";
    }
  }
  return config;
}

// The X.Y of each lib/pythonX.Y folder of the environment, sorted.
std::vector<std::string> LibVersions(const fs::path& root) {
  std::vector<std::string> versions;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(root / "lib", error)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with("python") && entry.is_directory()) versions.push_back(name.substr(6));
  }
  std::sort(versions.begin(), versions.end());
  return versions;
}

}  // namespace

std::string EmbeddedPythonVersion() {
  return fmt::format("{}.{}", PY_MAJOR_VERSION, PY_MINOR_VERSION);
}

Result<PythonEnvironment> InspectPythonEnvironment(const std::string& path,
                                                   std::string_view where) {
  std::error_code error;
  fs::path root = fs::absolute(path, error);
  if (error || !fs::is_directory(root, error)) {
    return Fail(InvalidArgumentError(
        fmt::format("{}: no such Python environment (a virtualenv folder): {}", where, path)));
  }
  root = root.lexically_normal();
  if (!root.has_filename()) root = root.parent_path();  // "venv/" -> "venv".
  PythonEnvironment environment{.root = root.string()};
  VenvConfig config = ReadVenvConfig(root);
  environment.include_system_site_packages = config.include_system_site_packages;
  environment.version = config.version;
  if (environment.version.empty()) {
    std::vector<std::string> versions = LibVersions(root);
    if (versions.size() == 1) environment.version = versions.front();
    if (versions.empty() && !config.found) {
      return Fail(InvalidArgumentError(fmt::format(
          "{}: not a Python virtualenv (neither pyvenv.cfg nor lib/python3.X in it): {}", where,
          environment.root)));
    }
  }
  std::string embedded = EmbeddedPythonVersion();
  if (environment.version != embedded) {
    std::string theirs =
        environment.version.empty() ? "of an unknown version" : "Python " + environment.version;
    return Fail(InvalidArgumentError(fmt::format(
        "{}: the virtualenv is for another Python than the one bizon embeds, so its packages "
        "cannot load; recreate it with `/usr/bin/python3 -m venv`: {} is {}, bizon embeds "
        "Python {}",
        where, environment.root, theirs, embedded)));
  }
  fs::path site = root / "lib" / ("python" + embedded) / "site-packages";
  if (!fs::is_directory(site, error)) {
    return Fail(InvalidArgumentError(
        fmt::format("{}: the virtualenv has no site-packages folder: {}", where, site.string())));
  }
  environment.site_packages = site.string();
  return environment;
}

std::string FindPrivateSite(const std::string& executable) {
  std::error_code error;
  fs::path folder = fs::path(executable).parent_path();
  for (const fs::path& candidate :
       {folder / "python-site", folder / ".." / "lib" / "bizon" / "python"}) {
    if (fs::is_directory(candidate, error)) return candidate.lexically_normal().string();
  }
  return "";
}

Result<PythonPathPlan> PlanPythonPath() {
  EnvironmentChoice& choice = Choice();
  std::string path;
  std::string where;
  {
    std::lock_guard lock(choice.mutex);
    choice.planned = true;
    path = choice.path;
    where = choice.where;
  }
  if (path.empty()) {
    const char* active = std::getenv("VIRTUAL_ENV");
    if (active != nullptr && *active != '\0') {
      path = active;
      where = "VIRTUAL_ENV (the active virtualenv)";
    }
  }
  PythonPathPlan plan;
  std::error_code error;
  fs::path executable = fs::read_symlink("/proc/self/exe", error);
  if (!error) plan.private_site = FindPrivateSite(executable.string());
  if (!path.empty()) {
    BIZON_ASSIGN_OR_RETURN(plan.environment, InspectPythonEnvironment(path, where));
    plan.has_environment = true;
  }
  return plan;
}

}  // namespace bizon::python

namespace bizon {

Status UsePythonEnvironment(const std::string& path, const std::string& where) {
  std::string absolute;
  if (!path.empty()) {
    BIZON_ASSIGN_OR_RETURN(python::PythonEnvironment environment,
                           python::InspectPythonEnvironment(path, where));
    absolute = environment.root;
  }
  python::EnvironmentChoice& choice = python::Choice();
  std::lock_guard lock(choice.mutex);
  if (choice.planned && absolute != choice.path) {
    return Fail(FailedPreconditionError(fmt::format(
        "{}: the embedded Python already runs with another environment; it is chosen once per "
        "process: {}",
        where, choice.path.empty() ? std::string("(none)") : choice.path)));
  }
  choice.path = std::move(absolute);
  choice.where = where;
  return Status::Ok();
}

std::string ConfiguredPythonEnvironment() {
  python::EnvironmentChoice& choice = python::Choice();
  std::lock_guard lock(choice.mutex);
  return choice.path;
}

}  // namespace bizon
