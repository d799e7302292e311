// Transforms: the `transforms:` list of a pipeline, run in the embedded Python interpreter.
//
// Semantics (engine spec §6, the original's behaviour): each {label, python} runs, in list order,
// on each record's parsed payload bound to `data`, with empty globals (builtins available) and a
// local namespace holding only `data`; the code has its common indentation removed and may
// mutate or rebind `data`. The result is re-serialised with Python's json defaults (ASCII
// escapes, ", " and ": " separators), so the bytes equal the original's; the next transform
// parses that text again. `data = None` gives `null`. Ids, timestamps and destination ids are
// never visible to the code and never change; the record count never changes.
//
// Thread-safety: a TransformChain is immutable after Compile(). Apply() may be called from any
// thread; calls into Python are serialised by the GIL, which Apply holds only while it runs
// (a Python source on the producer thread runs in between). Destroy it from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "bizon/record_batch.h"
#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

struct TransformOptions {
  /// Fails a transform that spends longer than this on one record (it loops forever). Zero: no
  /// limit. Only Python bytecode is interrupted: code blocked inside a C call (a socket read)
  /// fails when that call returns.
  std::chrono::milliseconds record_timeout{0};
  /// The pipeline file the transforms were read from. Set: each syntax error opens with
  /// "<file_name>:<yaml line>: ", the line of the faulty code line in the file (as `bizon config
  /// validate` reports it). Empty: it opens with "transforms[<i>]".
  std::string file_name;
};

class TransformChain {
 public:
  /// Compiles every snippet once. `transforms` is the config's list of {label, python} maps; an
  /// empty list (or null) gives a chain that leaves batches unchanged without starting Python.
  /// Syntax errors fail with code kInvalidArgument, failure class config, all of them at once,
  /// one per line: "transforms[<i>].python: syntax error in transform '<label>' at line <n> of
  /// its code: <message>: <code line>", opened by the file and line (`options.file_name`).
  static Result<std::unique_ptr<TransformChain>> Compile(const Value& transforms,
                                                         TransformOptions options = {});

  ~TransformChain();
  TransformChain(const TransformChain&) = delete;
  TransformChain& operator=(const TransformChain&) = delete;

  /// Replaces each payload of `batch` with its transformed JSON. On failure `batch` is left
  /// unchanged and the Status (failure class transform) names the label, the record id and the
  /// Python traceback: an exception, a result json.dumps rejects, a payload that is not JSON, or
  /// a record past `record_timeout`. A batch of 0 records (the termination message) is a no-op.
  Status Apply(RecordBatch& batch);

  /// Number of transforms; 0 means Apply() never touches Python.
  size_t size() const;

 private:
  struct Impl;
  explicit TransformChain(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace bizon
