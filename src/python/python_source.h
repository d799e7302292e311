// Custom Python sources: a .py file with a class written against the original's source API
// (`bizon.source.source.AbstractSource`, `SourceIteration`, `SourceRecord`, `SourceConfig`...),
// run unchanged in the embedded interpreter through the compatibility package under
// src/python/compat/ (`source.source_file_path` or `bizon run --custom-source`).
//
// Discovery (connectors spec §4.2): the file is executed as a fresh module; its top-level
// classes that extend AbstractSource, implement every abstract method and return a non-empty
// streams() are sources, in file order; the first one whose streams() lists the configured
// stream is used. A stream supports incremental sync when its class overrides
// get_records_after.
//
// Thread-safety: InspectPythonSource and OpenPythonSource may be called from any thread. The
// Source they return follows the Source contract (one thread at a time); it holds the GIL only
// while its Python code runs, so a transform on the consumer thread runs in between. Destroy it
// from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "bizon/registry.h"
#include "bizon/source.h"
#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

struct PythonSourceInfo {
  /// Every stream of every source class in the file, in file order. `description` names the
  /// class that serves the stream.
  std::vector<StreamSpec> streams;
  /// The first source class of the file.
  std::string class_name;
};

struct PythonSourceOptions {
  /// Fails a call into the source (get, get_records_after, check_connection...) that takes
  /// longer than this. Zero: no limit. Only Python bytecode is interrupted: a call blocked inside
  /// C code (a socket read without timeout) fails when it returns to Python.
  std::chrono::milliseconds call_timeout{0};
  /// The pipeline's top-level `streams:` list, null when it has none. A source constructed with
  /// it gets set_streams_config() called with the entries (bizon.common.models.StreamConfig)
  /// before anything else; an entry that does not fit StreamConfig is a config error.
  Value streams;
};

/// Loads `path` and lists its streams, for `bizon stream list`, `bizon config validate` and the
/// start of `bizon run` (refuse incremental on a stream whose `supports_incremental` is false).
/// `source_name` (the config's `source.name`) only labels messages. Errors: the file is missing
/// or not a .py file (kNotFound / kInvalidArgument, failure class config), it raises while
/// loading (kInvalidArgument, failure class source, with the traceback), or it defines no source
/// class (kNotFound, failure class config).
Result<PythonSourceInfo> InspectPythonSource(const std::string& path,
                                             const std::string& source_name);

/// Loads `path`, picks the class serving `context.stream`, validates `context.config` (the whole
/// `source:` block) with its get_config_class() — through pydantic when the class is a pydantic
/// model — and constructs it. Errors: those of InspectPythonSource; "Stream X not found.
/// Available streams are [...]" (kNotFound, config); an invalid config (kInvalidArgument,
/// config, with the validation errors); sync_mode incremental on a class that does not override
/// get_records_after (kInvalidArgument, config); an exception in the constructor (kUnavailable,
/// source, with the traceback).
///
/// The Source's calls fail with failure class source: kUnavailable with the traceback when the
/// Python code raises, kInvalidArgument when it breaks the contract (get() returning something
/// else than a SourceIteration, a record whose data is not a JSON-serialisable dict, a
/// pagination that is not JSON), kCancelled on bizon::CancelPythonCalls(). Records go into the
/// RecordBatch as json.dumps(data, ensure_ascii=False) (", " and ": " separators), the record's
/// timestamp (naive means UTC) and destination_id.
Result<std::unique_ptr<Source>> OpenPythonSource(const std::string& path,
                                                 const SourceContext& context,
                                                 const PythonSourceOptions& options = {});

}  // namespace bizon
