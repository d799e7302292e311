// The embedded Python a pipeline needs, prepared once before it runs.
//
// Loading a config never starts Python; the CLI calls PrepareEmbeddedPython() after the load
// (`bizon config validate`, `bizon run`) and hands the compiled chain to RunPipeline
// (RunOptions::transforms), so the transforms are compiled once per run.
#pragma once

#include <memory>

#include "bizon/status.h"
#include "config/pipeline_config.h"

namespace bizon {

class TransformChain;  // python/python_transforms.h

/// First the user's virtualenv (engine.runner.config.python_env, else $VIRTUAL_ENV), before
/// anything starts the interpreter; then the `transforms:` compiled, each with the run's
/// per-record timeout (engine.runner.config.python_timeout). Null when the config has no
/// transforms (Python is then not started here). Errors have failure class config and open with
/// `file:line: path:`, every syntax error on its own line.
Result<std::shared_ptr<TransformChain>> PrepareEmbeddedPython(const LoadedConfig& config);

/// Makes the embedded interpreter the compiler of connectors' Python hooks
/// (common/python_hooks.h). Starts nothing: Python starts when the first hook is compiled.
void RegisterEmbeddedPythonHooks();

}  // namespace bizon
