// The process's one embedded CPython interpreter, and the edge between Python and bizon.
//
// Internal to src/python/: this is the only header that includes Python.h and pybind11, and only
// src/python/*.cc include it (STYLE.md #9). The rest of bizon sees python_transforms.h and
// python_source.h.
//
// Lifecycle: EnsureInterpreter() starts the interpreter on first use, from any thread, and then
// releases the GIL. The interpreter lives until the process exits; it is never finalised
// (finalising while other threads may still call in is unsafe, and nothing needs it).
//
// Thread-safety: every function here except EnsureInterpreter() and CancelPythonCalls() requires
// the GIL, which callers take with GilLock for exactly the time Python runs. Python's own signal
// handlers are not installed: SIGINT and SIGTERM stay the engine's.
#pragma once

#include <Python.h>
#include <pybind11/eval.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "bizon/status.h"
#include "bizon/value.h"
#include "python/python_runtime.h"

namespace bizon::python {

namespace py = pybind11;

/// Starts the interpreter once per process (thread-safe; later calls only read a flag). On
/// return the calling thread does not hold the GIL. A failure (no usable Python installation) is
/// remembered and returned again on every call.
Status EnsureInterpreter();

/// Holds the GIL for its scope, from any thread. EnsureInterpreter() must have succeeded.
class GilLock {
 public:
  GilLock() : state_(PyGILState_Ensure()) {}
  ~GilLock() { PyGILState_Release(state_); }
  GilLock(const GilLock&) = delete;
  GilLock& operator=(const GilLock&) = delete;

 private:
  PyGILState_STATE state_;
};

/// An owned reference from the C API, released on scope exit (the GIL must be held).
class Ref {
 public:
  Ref() = default;
  explicit Ref(PyObject* object) : object_(object) {}
  ~Ref() { Py_XDECREF(object_); }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  Ref& operator=(PyObject* object) {
    Py_XDECREF(object_);
    object_ = object;
    return *this;
  }
  PyObject* get() const { return object_; }
  /// Hands the reference over to the caller.
  PyObject* release() { return std::exchange(object_, nullptr); }
  explicit operator bool() const { return object_ != nullptr; }

 private:
  PyObject* object_ = nullptr;
};

/// The `_bizon_runtime` helper module (src/python/compat/_bizon_runtime.py).
py::module_& Runtime();

/// What went wrong in Python, for an operator.
struct PythonError {
  std::string type_name;   // "KeyError".
  std::string summary;     // "KeyError: 'value'".
  std::string traceback;   // The full traceback as Python prints it.
  bool timed_out = false;  // Raised by the deadline of a CallScope.
  bool cancelled = false;  // Raised by CancelPythonCalls().
  bool contract = false;   // _bizon_runtime.ContractError: a clear message, no traceback needed.
  bool lookup = false;     // LookupError (a stream that the file does not have).
};

/// Describes (and consumes) the exception held by `error`.
PythonError DescribeError(py::error_already_set& error);

/// Builds the Status for a failed call: "<context>: <summary>", then the traceback on the
/// following lines unless the error is a contract violation. `timeout` names the deadline in the
/// message of a timed-out call.
Status ErrorStatus(const PythonError& error, std::string_view context, StatusCode code,
                   FailureClass failure_class, std::chrono::milliseconds timeout = {});

/// A Value as Python objects (maps become dicts in key order).
py::object ToPython(const Value& value);

/// A JSON-shaped Python object as a Value; anything else (a datetime, a set, an int beyond 64
/// bits) is an error naming `what` and the path inside it.
Result<Value> FromPython(py::handle object, std::string_view what);

/// Puts a deadline on the Python work the calling thread does while the scope lives, and makes
/// it cancellable by bizon::CancelPythonCalls(). Construct and destroy it with the GIL held.
///
/// With `progress` set, the deadline restarts whenever the counter changes (a per-record
/// deadline for a loop over records); otherwise it bounds the whole scope. A zero timeout sets no
/// deadline. A deadline interrupts Python bytecode; a call blocked inside C code (a socket read
/// without timeout) is only interrupted when it returns to Python.
class CallScope {
 public:
  explicit CallScope(std::chrono::milliseconds timeout,
                     const std::atomic<uint64_t>* progress = nullptr);
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  uint64_t id_;
  unsigned long thread_id_;  // NOLINT(google-runtime-int): CPython's type.
};

/// Formats a duration for messages: "2 s", "0.5 s".
std::string FormatSeconds(std::chrono::milliseconds duration);

}  // namespace bizon::python
