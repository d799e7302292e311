// The embedded Python runtime as the engine sees it: start it early, stop what runs in it.
//
// No Python header here: the engine includes this, python_transforms.h and python_source.h only.
// Thread-safety: both functions may be called from any thread at any time.
#pragma once

#include <string>

#include "bizon/status.h"

namespace bizon {

/// Starts the process's embedded CPython interpreter if it is not running yet. Optional: the
/// first transform or Python source starts it anyway. Call it before forking worker processes
/// only if the children will not use Python, or after the fork in each child that will (a
/// child forked from a process whose interpreter runs must not use it).
Status StartPythonRuntime();

/// Interrupts every Python call in progress (transforms and custom sources); each fails with
/// code kCancelled. For the engine's stop path (SIGINT/SIGTERM handling thread, a failed
/// producer). Not async-signal-safe: call it from a normal thread, not from a signal handler.
void CancelPythonCalls();

/// Makes the virtualenv at `path` (engine.runner.config.python_env; relative to the working
/// directory) the user's environment: its site-packages come ahead of bizon's own packages on
/// sys.path. Empty `path`: none configured, so $VIRTUAL_ENV applies. Call it before the
/// interpreter starts (the first transform or Python source); it checks the environment at once.
/// `where` opens errors ("pipeline.yml:7: engine.runner.config.python_env"). Errors
/// (kInvalidArgument, failure class config): not a virtualenv, or one of another Python minor
/// version than the embedded one (naming both); kFailedPrecondition when the interpreter already
/// runs with another environment.
Status UsePythonEnvironment(const std::string& path, const std::string& where);

/// The environment UsePythonEnvironment() set, as an absolute path; empty when none. Transform
/// worker processes are handed it, so their sys.path is the parent's.
std::string ConfiguredPythonEnvironment();

}  // namespace bizon
