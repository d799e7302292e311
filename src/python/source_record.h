// The `_bizon_native` module: `SourceRecord` as a C type, which bizon.source.models exports when
// it is importable (compat/bizon/source/models.py keeps the pure-Python class as the reference and
// as the fallback elsewhere). Internal to src/python/ (GIL held everywhere).
//
// A custom source builds one SourceRecord per row, so construction is on the hot path: the type
// is called through vectorcall (no kwargs dict), validates exactly as the Python class does (same
// checks, same ValueError texts), and keeps the default timestamp (now, UTC) as microseconds from
// the clock, turned into a datetime the first time `.timestamp` is read (then kept: the value
// read is stable).
#pragma once

#include <cstdint>
#include <optional>

#include "python/interpreter.h"

namespace bizon::python {

/// Creates `_bizon_native` and registers it in sys.modules, before bizon.source.models is first
/// imported. Returns false with a Python error set.
bool InstallNativeModule();

/// The C SourceRecord type; null before InstallNativeModule().
PyTypeObject* SourceRecordType();

/// The fields of a record of exactly the C SourceRecord type (borrowed; null when deleted).
/// `timestamp` is null while the default is pending: `default_timestamp_us` then holds it.
struct RecordFields {
  PyObject* id = nullptr;
  PyObject* data = nullptr;
  PyObject* timestamp = nullptr;
  PyObject* destination_id = nullptr;
  bool has_default_timestamp = false;
  int64_t default_timestamp_us = 0;
};
RecordFields ReadRecordFields(PyObject* record);

/// Microseconds since the Unix epoch of an exact `datetime` that is naive (taken as UTC, as
/// _bizon_runtime._micros does) or whose tzinfo is `timezone.utc`; nullopt for anything else.
std::optional<int64_t> UtcMicros(PyObject* value);

}  // namespace bizon::python
