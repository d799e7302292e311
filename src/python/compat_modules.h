// The `bizon` compatibility package and the runtime helpers, compiled into the binary.
//
// The sources are the .py files under src/python/compat/; the build turns them into the table
// below (compat/embed_modules.cmake). The interpreter serves them through an import hook, so
// `import bizon.source.source` works in a custom source without anything installed.
#pragma once

#include <cstddef>

namespace bizon::python {

struct EmbeddedModule {
  const char* name;  // "bizon.source.models".
  bool is_package;   // An __init__.py.
  const char* path;  // "bizon/source/models.py", for tracebacks.
  const char* source;
};

extern const EmbeddedModule kCompatModules[];
extern const size_t kCompatModuleCount;

}  // namespace bizon::python
