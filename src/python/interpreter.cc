#include "python/interpreter.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "python/compat_modules.h"
#include "python/python_env.h"
#include "python/source_record.h"

#ifndef BIZON_PYTHON_EXECUTABLE
#define BIZON_PYTHON_EXECUTABLE "/usr/bin/python3"
#endif

#if defined(__SANITIZE_ADDRESS__)  // GCC
#define BIZON_ADDRESS_SANITIZER 1
#elif defined(__has_feature)  // clang
#if __has_feature(address_sanitizer)
#define BIZON_ADDRESS_SANITIZER 1
#endif
#endif

#if defined(BIZON_ADDRESS_SANITIZER)
// pydantic-core (Rust, from bizon's own site folder) keeps a few 80-byte buffers of its module
// initialisation in statics that LeakSanitizer cannot see through. Suppressed by module name
// only, for the dev preset: no env var needed, and our own leaks are still reported.
// NOLINTNEXTLINE(bugprone-reserved-identifier,readability-identifier-naming): LSan's hook.
extern "C" const char* __lsan_default_suppressions() { return "leak:_pydantic_core.cpython\n"; }
#endif

namespace bizon::python {
namespace {

// Serves the embedded `bizon` package and `_bizon_runtime` (compat_modules.h) through an import
// hook placed first on sys.meta_path, so they win over any installed `bizon` (the original's
// package would drag its whole engine in). get_source() gives tracebacks their line text.
constexpr const char* kBootstrap = R"PY(
import importlib.abc
import importlib.util
import sys


class _EmbeddedLoader(importlib.abc.InspectLoader):
    def __init__(self, modules):
        self._modules = modules

    def get_source(self, fullname):
        return self._modules[fullname][2]

    def is_package(self, fullname):
        return self._modules[fullname][0]

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        is_package, path, source = self._modules[module.__name__]
        exec(compile(source, module.__spec__.origin, "exec", dont_inherit=True), module.__dict__)


class _EmbeddedFinder(importlib.abc.MetaPathFinder):
    def __init__(self, modules):
        self._modules = modules
        self._loader = _EmbeddedLoader(modules)

    def find_spec(self, fullname, path=None, target=None):
        entry = self._modules.get(fullname)
        if entry is None:
            return None
        return importlib.util.spec_from_loader(
            fullname, self._loader, origin="bizon-embedded/" + entry[1], is_package=entry[0])


sys.meta_path.insert(0, _EmbeddedFinder(embedded_modules))
)PY";

// Puts the user's virtualenv and bizon's private site (python_env.h) on sys.path, as Python would
// order them: PYTHONPATH and the standard library first (site left them there), then the
// virtualenv's site-packages, then ours (pydantic 2, requests, loguru), then the system's
// dist-packages (dropped for a virtualenv without include-system-site-packages, as its own
// python3 would). site.addsitedir also runs each folder's .pth files.
constexpr const char* kArrangePath = R"PY(
import site
import sys

system = set(site.getsitepackages())
if site.ENABLE_USER_SITE:
    system.add(site.getusersitepackages())
cut = next((i for i, entry in enumerate(sys.path) if entry in system), len(sys.path))
tail = sys.path[cut:]
if user_site and not keep_system:
    tail = [entry for entry in tail if entry not in system]
del sys.path[cut:]
for folder in (user_site, private_site):
    if folder:
        site.addsitedir(folder)
sys.path.extend(entry for entry in tail if entry not in sys.path)
)PY";

Status ArrangePath(const PythonPathPlan& plan) {
  if (plan.private_site.empty()) {
    spdlog::warn(
        "bizon's own Python packages were not found beside the executable (python-site, or "
        "../lib/bizon/python after install): custom sources get only the system's packages");
  }
  try {
    py::dict globals;
    globals["__builtins__"] = py::module_::import("builtins");
    globals["user_site"] = py::str(plan.has_environment ? plan.environment.site_packages : "");
    globals["keep_system"] =
        py::bool_(!plan.has_environment || plan.environment.include_system_site_packages);
    globals["private_site"] = py::str(plan.private_site);
    py::exec(kArrangePath, globals);
    return Status::Ok();
  } catch (py::error_already_set& error) {  // Before _bizon_runtime: no DescribeError yet.
    return InternalError(
        fmt::format("cannot set up the embedded Python's sys.path: {}", error.what()));
  }
}

// Leaked on purpose: the interpreter outlives every static destructor, and a py::object
// destroyed at exit without the GIL would crash.
py::module_* runtime_module = nullptr;
PyObject* timeout_type = nullptr;
PyObject* cancelled_type = nullptr;
PyObject* contract_type = nullptr;
// Set once the interpreter runs, so CancelPythonCalls() never starts one just to cancel nothing.
std::atomic<bool> interpreter_ready{false};

std::string PyStatusText(const PyStatus& status) {
  std::string text = status.err_msg != nullptr ? status.err_msg : "unknown error";
  if (status.func != nullptr) text = fmt::format("{} ({})", text, status.func);
  return text;
}

Status InstallRuntime() {
  try {
    // The C types bizon.source.models exports (source_record.h), before anything imports it.
    if (!InstallNativeModule()) throw py::error_already_set();
    py::dict modules;
    for (size_t i = 0; i < kCompatModuleCount; ++i) {
      const EmbeddedModule& module = kCompatModules[i];
      modules[py::str(module.name)] = py::make_tuple(py::bool_(module.is_package),
                                                     py::str(module.path), py::str(module.source));
    }
    py::dict globals;
    globals["__builtins__"] = py::module_::import("builtins");
    globals["embedded_modules"] = modules;
    py::exec(kBootstrap, globals);
    runtime_module = new py::module_(py::module_::import("_bizon_runtime"));
    timeout_type = runtime_module->attr("CallTimeout").ptr();
    cancelled_type = runtime_module->attr("CallCancelled").ptr();
    contract_type = runtime_module->attr("ContractError").ptr();
    // The module holds them: borrowed pointers stay valid for the life of the process.
    return Status::Ok();
  } catch (py::error_already_set& error) {
    PythonError described = DescribeError(error);
    return ErrorStatus(described, "cannot load the embedded bizon Python package",
                       StatusCode::kInternal, FailureClass::kUnknown);
  }
}

Status StartInterpreter() {
  if (Py_IsInitialized() == 0) {
    BIZON_ASSIGN_OR_RETURN(PythonPathPlan plan, PlanPythonPath());
    PyPreConfig preconfig;
    PyPreConfig_InitPythonConfig(&preconfig);
#if defined(BIZON_ADDRESS_SANITIZER)
    // Python's small-object allocator carves objects out of mmap'd arenas that LeakSanitizer
    // does not scan, so every dict or list they point to would be reported as leaked. Under
    // ASan (the dev preset) Python allocates with malloc instead: nothing to set for tests.
    preconfig.allocator = PYMEM_ALLOCATOR_MALLOC;
#endif
    PyStatus status = Py_PreInitialize(&preconfig);
    if (PyStatus_Exception(status)) {
      return InternalError(
          fmt::format("cannot start the embedded Python interpreter: {}", PyStatusText(status)));
    }
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;  // SIGINT and SIGTERM belong to the engine.
    config.parse_argv = 0;
    // Locates the standard library and site-packages of the Python we were built against,
    // wherever the bizon binary lives; sys.executable is that interpreter too.
    status = PyConfig_SetBytesString(&config, &config.program_name, BIZON_PYTHON_EXECUTABLE);
    if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
      return InternalError(fmt::format(
          "cannot start the embedded Python interpreter ({}): {}; check that the Python 3.11 "
          "standard library is installed (Debian: libpython3.11-stdlib)",
          BIZON_PYTHON_EXECUTABLE, PyStatusText(status)));
    }
    Status installed = ArrangePath(plan);
    if (installed.ok()) installed = InstallRuntime();
    // From here on the GIL is held only while Python runs (GilLock).
    PyEval_SaveThread();
    return installed;
  }
  // Someone else (a host process) started Python: only add our modules.
  GilLock gil;
  return InstallRuntime();
}

// --- Deadlines and cancellation -----------------------------------------------------------------

// One watchdog thread serves every CallScope. It sleeps until the earliest deadline; when one
// passes (and the scope's progress counter did not move), it takes the GIL and raises
// CallTimeout in the scope's thread with PyThreadState_SetAsyncExc. Entries are removed under
// the GIL, and the watchdog re-checks an entry under the GIL before raising, so an exception is
// never left pending for a later, unrelated call.
class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;

  uint64_t Register(unsigned long thread_id,  // NOLINT(google-runtime-int)
                    std::chrono::milliseconds timeout, const std::atomic<uint64_t>* progress) {
    std::lock_guard lock(mutex_);
    uint64_t id = next_id_++;
    Entry entry{.thread_id = thread_id, .timeout = timeout, .progress = progress};
    if (timeout.count() > 0) {
      entry.deadline = Clock::now() + timeout;
      if (progress != nullptr) entry.last_progress = progress->load(std::memory_order_relaxed);
      if (!thread_started_) {
        thread_started_ = true;
        std::thread([this] { Run(); }).detach();
      }
      wake_.notify_one();
    }
    entries_.emplace(id, entry);
    return id;
  }

  /// Called with the GIL held. Clears an exception the watchdog raised but the thread has not
  /// seen yet (the call finished first).
  void Unregister(uint64_t id) {
    std::lock_guard lock(mutex_);
    auto found = entries_.find(id);
    if (found == entries_.end()) return;
    if (found->second.fired) PyThreadState_SetAsyncExc(found->second.thread_id, nullptr);
    entries_.erase(found);
  }

  void CancelAll() {
    std::vector<uint64_t> targets;
    {
      std::lock_guard lock(mutex_);
      for (auto& [id, entry] : entries_) targets.push_back(id);
    }
    if (targets.empty()) return;
    Raise(targets, cancelled_type);
  }

 private:
  struct Entry {
    unsigned long thread_id = 0;  // NOLINT(google-runtime-int)
    std::chrono::milliseconds timeout{0};
    const std::atomic<uint64_t>* progress = nullptr;
    Clock::time_point deadline = Clock::time_point::max();
    uint64_t last_progress = 0;
    bool fired = false;
  };

  // Raises `type` in the threads of `ids` that are still registered.
  void Raise(const std::vector<uint64_t>& ids, PyObject* type) {
    GilLock gil;
    std::lock_guard lock(mutex_);
    for (uint64_t id : ids) {
      auto found = entries_.find(id);
      if (found == entries_.end()) continue;
      found->second.fired = true;
      found->second.deadline = Clock::time_point::max();
      PyThreadState_SetAsyncExc(found->second.thread_id, type);
    }
  }

  [[noreturn]] void Run() {
    std::unique_lock lock(mutex_);
    while (true) {
      Clock::time_point earliest = Clock::time_point::max();
      for (const auto& [id, entry] : entries_) earliest = std::min(earliest, entry.deadline);
      if (earliest == Clock::time_point::max()) {
        wake_.wait(lock);
      } else {
        wake_.wait_until(lock, earliest);
      }
      std::vector<uint64_t> expired;
      Clock::time_point now = Clock::now();
      for (auto& [id, entry] : entries_) {
        if (entry.fired || entry.deadline > now) continue;
        if (entry.progress != nullptr) {
          uint64_t seen = entry.progress->load(std::memory_order_relaxed);
          if (seen != entry.last_progress) {  // Still moving: restart the clock.
            entry.last_progress = seen;
            entry.deadline = now + entry.timeout;
            continue;
          }
        }
        expired.push_back(id);
      }
      if (expired.empty()) continue;
      lock.unlock();
      Raise(expired, timeout_type);
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<uint64_t, Entry> entries_;
  uint64_t next_id_ = 1;
  bool thread_started_ = false;
};

Watchdog& TheWatchdog() {
  static Watchdog* watchdog = new Watchdog();  // Leaked: its detached thread may still run.
  return *watchdog;
}

// --- Value <-> Python
// -----------------------------------------------------------------------------

Status NotJson(std::string_view what, const std::string& path, py::handle object) {
  return InvalidArgumentError(fmt::format(
      "{}{} is not JSON-shaped: a {} cannot be stored (use dict, list, str, int, float, bool "
      "or None)",
      what, path, Py_TYPE(object.ptr())->tp_name));
}

Result<Value> FromPythonAt(py::handle object, std::string_view what, const std::string& path,
                           int depth) {
  if (depth > 200) {
    return Fail(InvalidArgumentError(fmt::format("{}{} is nested too deeply", what, path)));
  }
  PyObject* raw = object.ptr();
  if (raw == Py_None) return Value();
  if (PyBool_Check(raw)) return Value(raw == Py_True);
  if (PyLong_Check(raw)) {
    int overflow = 0;
    long long integer = PyLong_AsLongLongAndOverflow(raw, &overflow);  // NOLINT(google-runtime-int)
    if (overflow != 0) {
      return Fail(
          InvalidArgumentError(fmt::format("{}{} is an integer beyond 64 bits", what, path)));
    }
    return Value(static_cast<int64_t>(integer));
  }
  if (PyFloat_Check(raw)) return Value(PyFloat_AsDouble(raw));
  if (PyUnicode_Check(raw)) {
    Py_ssize_t size = 0;
    const char* text = PyUnicode_AsUTF8AndSize(raw, &size);
    if (text == nullptr) throw py::error_already_set();
    return Value(std::string(text, static_cast<size_t>(size)));
  }
  if (PyDict_Check(raw)) {
    Value::Map map;
    for (auto [key, item] : py::reinterpret_borrow<py::dict>(object)) {
      std::string name;
      if (PyUnicode_Check(key.ptr())) {
        name = key.cast<std::string>();
      } else if (PyLong_Check(key.ptr()) && !PyBool_Check(key.ptr())) {
        name = py::str(key).cast<std::string>();  // As json.dumps writes int keys.
      } else {
        return Fail(
            InvalidArgumentError(fmt::format("{}{} has a key of type {}; JSON keys are strings",
                                             what, path, Py_TYPE(key.ptr())->tp_name)));
      }
      BIZON_ASSIGN_OR_RETURN(
          Value child, FromPythonAt(item, what, fmt::format("{}['{}']", path, name), depth + 1));
      map.emplace_back(std::move(name), std::move(child));
    }
    return Value(std::move(map));
  }
  if (PyList_Check(raw) || PyTuple_Check(raw)) {
    Value::List list;
    size_t index = 0;
    for (py::handle item : py::reinterpret_borrow<py::sequence>(object)) {
      BIZON_ASSIGN_OR_RETURN(
          Value child, FromPythonAt(item, what, fmt::format("{}[{}]", path, index), depth + 1));
      list.push_back(std::move(child));
      ++index;
    }
    return Value(std::move(list));
  }
  return Fail(NotJson(what, path, object));
}

}  // namespace

Status EnsureInterpreter() {
  static std::once_flag once;
  static const Status* started = nullptr;  // Leaked with the interpreter.
  std::call_once(once, [] {
    started = new Status(StartInterpreter());
    interpreter_ready.store(started->ok(), std::memory_order_release);
  });
  return *started;
}

py::module_& Runtime() { return *runtime_module; }

PythonError DescribeError(py::error_already_set& error) {
  PythonError described;
  py::object value = error.value();
  const py::object& type = error.type();
  described.type_name = type ? py::str(type.attr("__name__")).cast<std::string>() : "Exception";
  described.timed_out = error.matches(timeout_type);
  described.cancelled = error.matches(cancelled_type);
  described.contract = error.matches(contract_type);
  described.lookup = error.matches(PyExc_LookupError) && !error.matches(PyExc_KeyError) &&
                     !error.matches(PyExc_IndexError);
  try {
    if (described.contract || described.lookup) {
      described.summary = py::str(value).cast<std::string>();
    } else {
      described.summary = Runtime().attr("exception_summary")(value).cast<std::string>();
      const py::object& trace = error.trace();
      described.traceback =
          Runtime().attr("format_exception")(value, trace ? trace : py::none()).cast<std::string>();
    }
  } catch (py::error_already_set& nested) {
    // The exception's own __str__ failed: fall back to what pybind11 recorded.
    described.summary =
        fmt::format("{} (its text could not be read: {})", error.what(), nested.what());
  }
  return described;
}

Status ErrorStatus(const PythonError& error, std::string_view context, StatusCode code,
                   FailureClass failure_class, std::chrono::milliseconds timeout) {
  if (error.cancelled) {
    return {StatusCode::kCancelled, fmt::format("{}: cancelled (the run is stopping)", context),
            failure_class};
  }
  if (error.timed_out) {
    return {code,
            fmt::format("{}: no result after {} (it may loop forever or wait on something that "
                        "never answers)",
                        context, FormatSeconds(timeout)),
            failure_class};
  }
  std::string message = fmt::format("{}: {}", context, error.summary);
  if (!error.traceback.empty()) message += "\n" + error.traceback;
  return {code, std::move(message), failure_class};
}

py::object ToPython(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kNull:
      return py::none();
    case Value::Kind::kBool:
      return py::bool_(value.AsBool());
    case Value::Kind::kInteger:
      return py::int_(value.AsInteger());
    case Value::Kind::kDouble:
      return py::float_(value.AsDouble());
    case Value::Kind::kString:
      return py::str(value.AsString());
    case Value::Kind::kList: {
      py::list list;
      for (const Value& item : value.AsList()) list.append(ToPython(item));
      return list;
    }
    case Value::Kind::kMap: {
      py::dict dict;
      for (const auto& [key, item] : value.AsMap()) dict[py::str(key)] = ToPython(item);
      return dict;
    }
  }
  return py::none();
}

Result<Value> FromPython(py::handle object, std::string_view what) {
  return FromPythonAt(object, what, "", 0);
}

CallScope::CallScope(std::chrono::milliseconds timeout, const std::atomic<uint64_t>* progress)
    : thread_id_(PyThread_get_thread_ident()) {
  id_ = TheWatchdog().Register(thread_id_, timeout, progress);
}

CallScope::~CallScope() { TheWatchdog().Unregister(id_); }

std::string FormatSeconds(std::chrono::milliseconds duration) {
  double seconds = static_cast<double>(duration.count()) / 1000.0;
  if (seconds == std::floor(seconds)) return fmt::format("{} s", static_cast<int64_t>(seconds));
  return fmt::format("{} s", seconds);
}

}  // namespace bizon::python

namespace bizon {

Status StartPythonRuntime() { return python::EnsureInterpreter(); }

void CancelPythonCalls() {
  if (!python::interpreter_ready.load(std::memory_order_acquire)) return;
  python::TheWatchdog().CancelAll();
}

}  // namespace bizon
