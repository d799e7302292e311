# Writes OUTPUT: a C++ file holding every .py file under ROOT as a string literal, keyed by its
# module name ("bizon/source/models.py" -> "bizon.source.models", a package's __init__.py -> the
# package). Run by the build (see the embedded-Python block of CMakeLists.txt), never by hand.
file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/*.py)
list(SORT files)
set(body "")
set(count 0)
foreach(relative ${files})
  file(READ ${ROOT}/${relative} text)
  string(FIND "${text}" ")bizon_py\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${relative} contains the raw-string delimiter )bizon_py\"")
  endif()
  string(REGEX REPLACE "\\.py$" "" module ${relative})
  set(package false)
  if(module MATCHES "/__init__$")
    string(REGEX REPLACE "/__init__$" "" module ${module})
    set(package true)
  endif()
  string(REPLACE "/" "." module ${module})
  string(APPEND body "    {\"${module}\", ${package}, \"${relative}\",\n     R\"bizon_py(${text})bizon_py\"},\n")
  math(EXPR count "${count} + 1")
endforeach()
set(content "// Generated from src/python/compat/**/*.py by src/python/compat/embed_modules.cmake.
// Do not edit: change the .py files.
#include \"python/compat_modules.h\"

namespace bizon::python {

const EmbeddedModule kCompatModules[] = {
${body}};
const size_t kCompatModuleCount = ${count};

}  // namespace bizon::python
")
# Rewrite only on change, so an unrelated rebuild does not recompile it.
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} previous)
  if(previous STREQUAL content)
    return()
  endif()
endif()
file(WRITE ${OUTPUT} "${content}")
