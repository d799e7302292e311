#include "python/python_transforms.h"

#include <fmt/format.h>

#include <algorithm>
#include <expected>
#include <fstream>
#include <string>
#include <vector>

#include "python/interpreter.h"
#include "python/json_writer.h"

namespace bizon {
namespace {

using python::GilLock;
using python::Ref;
namespace py = python::py;

struct Snippet {
  std::string label;
  std::string python;
  SourceMark mark;  // Of the `python` value.
};

struct SyntaxProblem {
  int line = 0;
  std::string message;  // "'(' was never closed: x = ("
};

Result<std::vector<Snippet>> ReadSnippets(const Value& transforms) {
  std::vector<Snippet> snippets;
  if (transforms.is_null()) return snippets;
  if (!transforms.is_list()) {
    return Fail(InvalidArgumentError(fmt::format(
        "transforms must be a list of {{label, python}}, got a {}", ToString(transforms.kind()))));
  }
  const Value::List& items = transforms.AsList();
  for (size_t i = 0; i < items.size(); ++i) {
    const Value& item = items[i];
    const Value* label = item.Find("label");
    const Value* python = item.Find("python");
    if (label == nullptr || !label->is_string() || python == nullptr || !python->is_string()) {
      return Fail(InvalidArgumentError(
          fmt::format("transforms[{}] must have a string `label` and a string `python`", i)));
    }
    snippets.push_back({label->AsString(), python->AsString(), python->mark()});
  }
  return snippets;
}

// Compiles one snippet. A syntax error is returned as a SyntaxProblem, anything else throws.
std::expected<py::object, SyntaxProblem> CompileSnippet(const Snippet& snippet) {
  try {
    return python::Runtime().attr("compile_transform")(snippet.label, snippet.python);
  } catch (py::error_already_set& error) {
    if (!error.matches(PyExc_SyntaxError) && !error.matches(PyExc_ValueError)) throw;
    SyntaxProblem problem;
    if (error.matches(PyExc_SyntaxError)) {
      py::tuple details = python::Runtime().attr("syntax_error_details")(error.value());
      problem.line = details[0].cast<int>();
      problem.message = details[2].cast<std::string>();
      std::string text = details[3].cast<std::string>();
      if (!text.empty()) problem.message += ": " + text;
    } else {  // "source code string cannot contain null bytes"
      problem.message = py::str(error.value()).cast<std::string>();
    }
    return std::unexpected(std::move(problem));
  }
}

// The YAML line of line `code_line` of a snippet: exact for a literal block (`python: |`),
// whose lines map one to one, else the line of the `python` value itself.
int YamlLine(std::string_view file_name, SourceMark mark, int code_line) {
  if (mark.line <= 0 || code_line <= 0 || file_name.empty()) return mark.line;
  std::ifstream file{std::string(file_name)};
  std::string text;
  for (int line = 1; line <= mark.line && std::getline(file, text); ++line) {
  }
  size_t column = static_cast<size_t>(std::max(mark.column, 1) - 1);
  if (file && column < text.size() && text[column] == '|') return mark.line + code_line;
  return mark.line;
}

std::string QuotedId(std::string_view id) { return fmt::format("'{}'", id); }

// The text of a str that json.dumps produced (ASCII only); empty on error.
std::string_view AsciiView(PyObject* text) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text, &size);
  if (data == nullptr) {
    PyErr_Clear();
    return {};
  }
  return {data, static_cast<size_t>(size)};
}

}  // namespace

struct TransformChain::Impl {
  struct Compiled {
    std::string label;
    PyObject* code = nullptr;  // Owned.
  };
  TransformOptions options;
  std::vector<Compiled> transforms;
  PyObject* loads = nullptr;     // Owned: json.JSONDecoder().decode.
  PyObject* dumps = nullptr;     // Owned: json.JSONEncoder().encode.
  PyObject* data_key = nullptr;  // Owned: the interned "data".
  PyObject* builtins_key = nullptr;
  // The C halves of loads/dumps (_bizon_runtime.transform_codec), null without _json.
  PyObject* scan_once = nullptr;
  PyObject* c_encoder = nullptr;
  PyObject* markers = nullptr;
  PyObject* zero = nullptr;
  PyObject* empty = nullptr;

  ~Impl() {
    if (transforms.empty() && loads == nullptr) return;  // Never touched Python.
    GilLock gil;
    for (Compiled& compiled : transforms) Py_XDECREF(compiled.code);
    Py_XDECREF(loads);
    Py_XDECREF(dumps);
    Py_XDECREF(data_key);
    Py_XDECREF(builtins_key);
    Py_XDECREF(scan_once);
    Py_XDECREF(c_encoder);
    Py_XDECREF(markers);
    Py_XDECREF(zero);
    Py_XDECREF(empty);
  }

  // json.loads(text): the scanner called directly, whitespace around the document skipped as
  // decode() skips it. Anything unusual goes through loads itself, for its exact error.
  PyObject* Parse(PyObject* text, std::string_view bytes) const {
    if (scan_once == nullptr) return PyObject_CallOneArg(loads, text);
    auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    size_t lead = 0;
    while (lead < bytes.size() && is_space(bytes[lead])) ++lead;
    size_t trail = 0;
    while (trail < bytes.size() - lead && is_space(bytes[bytes.size() - 1 - trail])) ++trail;
    Ref index(PyLong_FromSize_t(lead));
    if (!index) return nullptr;
    PyObject* arguments[] = {text, index.get()};
    Ref scanned(PyObject_Vectorcall(scan_once, arguments, 2, nullptr));
    if (scanned && PyTuple_Check(scanned.get()) && PyTuple_GET_SIZE(scanned.get()) == 2) {
      Py_ssize_t end = PyLong_AsSsize_t(PyTuple_GET_ITEM(scanned.get(), 1));
      if (end == PyUnicode_GET_LENGTH(text) - static_cast<Py_ssize_t>(trail)) {
        PyObject* value = PyTuple_GET_ITEM(scanned.get(), 0);
        Py_INCREF(value);
        return value;
      }
    }
    PyErr_Clear();  // StopIteration or "Extra data": let loads raise the JSONDecodeError.
    return PyObject_CallOneArg(loads, text);
  }

  // json.dumps(value) with the defaults: the C encoder's chunks joined, as encode() does.
  PyObject* Serialise(PyObject* value) const {
    if (c_encoder == nullptr) return PyObject_CallOneArg(dumps, value);
    PyObject* arguments[] = {value, zero};
    Ref chunks(PyObject_Vectorcall(c_encoder, arguments, 2, nullptr));
    if (!chunks) {
      // A failed call can leave entries in the circular-reference registry: empty it, keeping
      // the error for the caller.
      PyObject* type = nullptr;
      PyObject* error = nullptr;
      PyObject* trace = nullptr;
      PyErr_Fetch(&type, &error, &trace);
      PyDict_Clear(markers);
      PyErr_Restore(type, error, trace);
      return nullptr;
    }
    return PyUnicode_Join(empty, chunks.get());
  }

  Status RecordError(const RecordBatch& batch, size_t index, std::string_view label,
                     std::string_view what) const {
    py::error_already_set error;
    python::PythonError described = python::DescribeError(error);
    std::string context =
        label.empty() ? fmt::format(
                            "Error applying transformation: the payload of record {} is not "
                            "valid JSON text",
                            QuotedId(batch.id(index)))
                      : fmt::format("Error applying transformation '{}' to record {}{}", label,
                                    QuotedId(batch.id(index)), what);
    return python::ErrorStatus(described, context, StatusCode::kInvalidArgument,
                               FailureClass::kTransform, options.record_timeout);
  }

  // Runs the chain over `batch` into `out`. GIL held.
  Status Run(const RecordBatch& batch, RecordBatch& out, std::atomic<uint64_t>& progress) const {
    PyObject* builtins = PyEval_GetBuiltins();  // Borrowed: the builtins module's dict.
    std::string json;  // The current record's JSON text, reused across records.
    size_t count = batch.size();
    for (size_t i = 0; i < count; ++i) {
      progress.store(i + 1, std::memory_order_relaxed);
      std::string_view payload = batch.payload(i);
      Ref text(
          PyUnicode_DecodeUTF8(payload.data(), static_cast<Py_ssize_t>(payload.size()), "strict"));
      if (!text) return RecordError(batch, i, "", "");
      Ref data(Parse(text.get(), payload));
      if (!data) return RecordError(batch, i, "", "");
      for (size_t t = 0; t < transforms.size(); ++t) {
        const Compiled& transform = transforms[t];
        if (t > 0) {
          // The original re-parses the previous transform's JSON text: same types (tuples become
          // lists, int keys strings) for the next snippet.
          Ref previous(
              PyUnicode_DecodeASCII(json.data(), static_cast<Py_ssize_t>(json.size()), "strict"));
          data = previous ? Parse(previous.get(), json) : nullptr;
          if (!data) return RecordError(batch, i, transform.label, " (parsing its input)");
        }
        Ref globals(PyDict_New());
        Ref locals(PyDict_New());
        if (!globals || !locals || PyDict_SetItem(globals.get(), builtins_key, builtins) < 0 ||
            PyDict_SetItem(locals.get(), data_key, data.get()) < 0) {
          return RecordError(batch, i, transform.label, "");
        }
        Ref result(PyEval_EvalCode(transform.code, globals.get(), locals.get()));
        if (!result) return RecordError(batch, i, transform.label, "");
        PyObject* rebound = PyDict_GetItemWithError(locals.get(), data_key);  // Borrowed.
        if (rebound == nullptr) {
          if (PyErr_Occurred() == nullptr) {
            PyErr_SetString(PyExc_NameError, "the transform deleted `data`");
          }
          return RecordError(batch, i, transform.label, "");
        }
        json.clear();
        if (!python::JsonWriter(json, /*ensure_ascii=*/true).Write(rebound)) {
          Ref serialised(Serialise(rebound));
          if (!serialised) {
            return RecordError(batch, i, transform.label, " (serialising its result to JSON)");
          }
          json.assign(AsciiView(serialised.get()));
        }
      }
      out.Add(batch.id(i), json, batch.timestamp_us(i), batch.destination_id(i));
    }
    return Status::Ok();
  }
};

TransformChain::TransformChain(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TransformChain::~TransformChain() = default;

size_t TransformChain::size() const { return impl_->transforms.size(); }

Result<std::unique_ptr<TransformChain>> TransformChain::Compile(const Value& transforms,
                                                                TransformOptions options) {
  auto snippets_or = ReadSnippets(transforms);
  if (!snippets_or) {
    if (options.file_name.empty()) return Fail(snippets_or.error());
    return Fail(InvalidArgumentError(
        fmt::format("{}: {}", options.file_name, snippets_or.error().message())));
  }
  const std::vector<Snippet>& snippets = *snippets_or;
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (snippets.empty()) return std::unique_ptr<TransformChain>(new TransformChain(std::move(impl)));
  BIZON_RETURN_IF_ERROR(python::EnsureInterpreter());
  GilLock gil;
  try {
    // Every snippet is compiled, so that one run reports all the syntax errors.
    std::string problems;
    for (size_t i = 0; i < snippets.size(); ++i) {
      auto compiled = CompileSnippet(snippets[i]);
      if (compiled) {
        impl->transforms.push_back({snippets[i].label, compiled->release().ptr()});
        continue;
      }
      std::string where;
      if (!options.file_name.empty()) {
        int line = YamlLine(options.file_name, snippets[i].mark, compiled.error().line);
        where = line > 0 ? fmt::format("{}:{}: ", options.file_name, line)
                         : fmt::format("{}: ", options.file_name);
      }
      if (!problems.empty()) problems += '\n';
      problems += fmt::format(
          "{}transforms[{}].python: syntax error in transform '{}' at line {} of its code: {}",
          where, i, snippets[i].label, compiled.error().line, compiled.error().message);
    }
    if (!problems.empty()) {
      // Release what was compiled before failing (under the GIL, held here).
      for (Impl::Compiled& done : impl->transforms) Py_XDECREF(done.code);
      impl->transforms.clear();
      return Fail(InvalidArgumentError(std::move(problems)));
    }
    py::module_& runtime = python::Runtime();
    impl->loads = py::object(runtime.attr("transform_loads")).release().ptr();
    impl->dumps = py::object(runtime.attr("transform_dumps")).release().ptr();
    impl->data_key = PyUnicode_InternFromString("data");
    impl->builtins_key = PyUnicode_InternFromString("__builtins__");
    py::object codec = runtime.attr("transform_codec")();
    if (!codec.is_none()) {
      impl->scan_once = py::object(codec[py::int_(0)]).release().ptr();
      impl->c_encoder = py::object(codec[py::int_(1)]).release().ptr();
      impl->markers = py::object(codec[py::int_(2)]).release().ptr();
      impl->zero = PyLong_FromLong(0);
      impl->empty = PyUnicode_FromStringAndSize("", 0);
    }
  } catch (py::error_already_set& error) {
    python::PythonError described = python::DescribeError(error);
    return Fail(python::ErrorStatus(described, "cannot compile the transforms",
                                    StatusCode::kInternal, FailureClass::kTransform));
  }
  return std::unique_ptr<TransformChain>(new TransformChain(std::move(impl)));
}

Status TransformChain::Apply(RecordBatch& batch) {
  if (impl_->transforms.empty() || batch.empty()) return Status::Ok();
  RecordBatch out;
  out.Reserve(batch.size(), batch.PayloadBytes() + batch.PayloadBytes() / 4 + 64);
  {
    GilLock gil;
    std::atomic<uint64_t> progress{0};
    python::CallScope scope(impl_->options.record_timeout, &progress);
    try {
      BIZON_RETURN_IF_ERROR(impl_->Run(batch, out, progress));
    } catch (py::error_already_set& error) {
      python::PythonError described = python::DescribeError(error);
      return python::ErrorStatus(described, "Error applying transformation",
                                 StatusCode::kInvalidArgument, FailureClass::kTransform);
    } catch (const std::exception& error) {
      return InternalError(fmt::format("Error applying transformation: {}", error.what()));
    }
  }
  // Keep each record's extraction time: one value for the usual single-iteration batch, else
  // runs of equal values (RecordBatch stamps whole batches only).
  size_t count = batch.size();
  int64_t first = batch.extracted_at_us(0);
  bool uniform = true;
  for (size_t i = 1; i < count && uniform; ++i) uniform = batch.extracted_at_us(i) == first;
  if (uniform) {
    out.SetExtractedAt(first);
    batch = std::move(out);
    return Status::Ok();
  }
  RecordBatch stamped;
  stamped.Reserve(count, out.PayloadBytes());
  for (size_t begin = 0; begin < count;) {
    size_t end = begin + 1;
    while (end < count && batch.extracted_at_us(end) == batch.extracted_at_us(begin)) ++end;
    RecordBatch run;
    run.AppendRange(out, begin, end);
    run.SetExtractedAt(batch.extracted_at_us(begin));
    stamped.AppendRange(run, 0, run.size());
    begin = end;
  }
  batch = std::move(stamped);
  return Status::Ok();
}

}  // namespace bizon
