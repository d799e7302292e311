#include "python/python_source.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "python/interpreter.h"
#include "python/json_writer.h"
#include "python/source_record.h"

namespace bizon {
namespace {

using python::GilLock;
using python::Ref;
namespace py = python::py;

Status CheckFile(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return {StatusCode::kNotFound, fmt::format("File {} not found.", path), FailureClass::kConfig};
  }
  if (std::filesystem::path(path).extension() != ".py") {
    return InvalidArgumentError(
        fmt::format("File {} is not a python file. File extension should be '.py'", path));
  }
  return Status::Ok();
}

// The Status of an exception raised while loading, validating or constructing a source.
Status LoadError(py::error_already_set& error, std::string_view context) {
  python::PythonError described = python::DescribeError(error);
  if (described.lookup) {
    return {StatusCode::kNotFound, described.summary, FailureClass::kConfig};
  }
  if (described.contract) {
    return {StatusCode::kInvalidArgument, fmt::format("{}: {}", context, described.summary),
            FailureClass::kConfig};
  }
  return python::ErrorStatus(described, fmt::format("{}: loading raised", context),
                             StatusCode::kInvalidArgument, FailureClass::kSource);
}

std::string_view AsView(PyObject* text) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text, &size);
  if (data == nullptr) throw py::error_already_set();
  return {data, static_cast<size_t>(size)};
}

// The UTF-8 of a str, or nullopt (error cleared) for one that has none (a lone surrogate).
std::optional<std::string_view> Utf8(PyObject* text) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text, &size);
  if (data == nullptr) {
    PyErr_Clear();
    return std::nullopt;
  }
  return std::string_view(data, static_cast<size_t>(size));
}

class PythonSource final : public Source {
 public:
  PythonSource(py::object instance, std::string class_name, bool incremental,
               PythonSourceOptions options)
      : instance_(std::move(instance)),
        class_name_(std::move(class_name)),
        incremental_(incremental),
        options_(std::move(options)) {
    // What ConvertRecords uses (constructed under the GIL).
    py::module_ models = py::module_::import("bizon.source.models");
    iteration_type_ = models.attr("SourceIteration");
    native_records_ = models.attr("SourceRecord").ptr() ==
                      reinterpret_cast<PyObject*>(python::SourceRecordType());
    record_payload_ = python::Runtime().attr("record_payload");
    record_micros_ = python::Runtime().attr("record_micros");
  }

  ~PythonSource() override {
    GilLock gil;
    try {
      python::Runtime().attr("close_source")(instance_);
    } catch (const std::exception& error) {
      // Closing the HTTP session failed: nothing is lost, the process keeps running.
      try {
        spdlog::warn("custom source {}: closing its session failed: {}", class_name_, error.what());
      } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw.
      }
    }
    json_keys_.Clear();
    for (py::object* held : {&instance_, &iteration_type_, &record_payload_, &record_micros_}) {
      PyObject* raw = held->release().ptr();  // Dropped here, under the GIL.
      Py_XDECREF(raw);
    }
  }

  PythonSource(const PythonSource&) = delete;
  PythonSource& operator=(const PythonSource&) = delete;

  Status CheckConnection() override {
    return Call("check_connection()", [&]() -> Status {
      py::tuple result = python::Runtime().attr("check_connection")(instance_);
      if (result[0].cast<bool>()) return Status::Ok();
      std::string error = result[1].is_none() ? "no error text" : result[1].cast<std::string>();
      return {StatusCode::kUnavailable,
              fmt::format("custom source {}: check_connection() failed: {}", class_name_, error),
              FailureClass::kSource};
    });
  }

  std::optional<int64_t> TotalRecordsCount() override {
    Result<std::optional<int64_t>> count =
        Call("get_total_records_count()", [&]() -> Result<std::optional<int64_t>> {
          py::object value = python::Runtime().attr("total_records_count")(instance_);
          if (value.is_none()) return std::optional<int64_t>();
          return std::optional<int64_t>(value.cast<int64_t>());
        });
    if (!count) {
      // Only progress and ETA logs use the count: carry on without it.
      spdlog::warn("{}", count.error().message());
      return std::nullopt;
    }
    return *count;
  }

  Result<SourceIteration> Get(const Value& pagination) override {
    return Call("get()", [&]() -> Result<SourceIteration> {
      py::object iteration = instance_.attr("get")(python::ToPython(pagination));
      return Remember(Convert(iteration, "get"));
    });
  }

  Result<SourceIteration> GetRecordsAfter(const IncrementalState& state,
                                          const Value& pagination) override {
    if (!incremental_) {
      return Fail(Status(StatusCode::kUnimplemented,
                         fmt::format("custom source {} does not implement get_records_after, so "
                                     "it cannot run with sync_mode incremental",
                                     class_name_),
                         FailureClass::kConfig));
    }
    return Call("get_records_after()", [&]() -> Result<SourceIteration> {
      py::object source_state = python::Runtime().attr("incremental_state")(
          state.last_run_us, state.run_started_at_us, python::ToPython(state.state),
          state.cursor_field);
      py::object iteration =
          instance_.attr("get_records_after")(source_state, python::ToPython(pagination));
      return Remember(Convert(iteration, "get_records_after"));
    });
  }

  /// The Python contract's commit() acknowledges everything fetched, so it is called only once
  /// what was recorded reaches the last iteration fetched; a later cursor will.
  Status Commit(const Value& up_to) override {
    auto exhausted = [](const Value& v) {
      return v.is_null() || (v.is_map() && v.AsMap().empty());
    };
    bool reached = latest_pagination_ && (up_to == *latest_pagination_ ||
                                          (exhausted(up_to) && exhausted(*latest_pagination_)));
    if (!reached) return Status::Ok();
    return Call("commit()", [&]() -> Status {
      instance_.attr("commit")();
      return Status::Ok();
    });
  }

 private:
  // Runs `body` with the GIL and the call deadline; every Python exception becomes a Status.
  template <typename Body>
  auto Call(std::string_view method, Body&& body) -> decltype(body()) {
    GilLock gil;
    python::CallScope scope(options_.call_timeout);
    try {
      return body();
    } catch (py::error_already_set& error) {
      python::PythonError described = python::DescribeError(error);
      if (described.contract) {
        return Fail(Status(StatusCode::kInvalidArgument,
                           fmt::format("custom source {}: {}", class_name_, described.summary),
                           FailureClass::kSource));
      }
      bool raised = !described.timed_out && !described.cancelled;
      return Fail(python::ErrorStatus(
          described,
          fmt::format("custom source {}: {}{}", class_name_, method, raised ? " raised" : ""),
          StatusCode::kUnavailable, FailureClass::kSource, options_.call_timeout));
    } catch (const std::exception& error) {
      return Fail(InternalError(
          fmt::format("custom source {}: {}: {}", class_name_, method, error.what())));
    }
  }

  Result<SourceIteration> Remember(Result<SourceIteration> iteration) {
    if (iteration) {
      latest_pagination_ = iteration->IsLast() ? Value::EmptyMap() : iteration->next_pagination;
    }
    return iteration;
  }

  // Checks and flattens what get()/get_records_after() returned (GIL held).
  Result<SourceIteration> Convert(const py::object& returned, std::string_view method) {
    SourceIteration iteration;
    py::object pagination;
    py::object state;
    if (ConvertRecords(returned.ptr(), iteration.records, pagination, state) ==
        Converted::kByPython) {
      iteration.records.Clear();
      py::tuple columns = python::Runtime().attr("iteration_columns")(returned, method);
      AddColumns(columns, iteration.records);
      pagination = columns[4];
      state = columns[5];
    }
    return Finish(std::move(iteration), pagination, state, method);
  }

  enum class Converted { kDone, kByPython };

  // The usual iteration, converted straight into `records`: a SourceIteration whose records are
  // all of the C SourceRecord type, with _bizon_runtime.iteration_columns' checks in its order.
  // Each record's data is written as JSON into the batch's payload buffer (JsonWriter), else by
  // _bizon_runtime.record_payload; a timestamp that is the pending default or a naive or UTC
  // datetime is read here, else by record_micros. An exception those helpers raise (the
  // reference raises the same one at the same record) is thrown as error_already_set. Anything
  // else unusual returns kByPython, `records` left to clear: iteration_columns then converts the
  // iteration or raises the exact contract error.
  Converted ConvertRecords(PyObject* returned, RecordBatch& records, py::object& pagination,
                           py::object& state) {
    PyTypeObject* record_type = python::SourceRecordType();
    if (record_type == nullptr || !native_records_) return Converted::kByPython;
    auto by_python = [] {
      PyErr_Clear();
      return Converted::kByPython;
    };
    int is_iteration = PyObject_IsInstance(returned, iteration_type_.ptr());
    if (is_iteration <= 0) return by_python();
    Ref next_pagination(PyObject_GetAttrString(returned, "next_pagination"));
    if (!next_pagination || !PyDict_Check(next_pagination.get())) return by_python();
    Ref list(PyObject_GetAttrString(returned, "records"));
    if (!list || !PyList_Check(list.get())) return by_python();
    auto count = static_cast<size_t>(PyList_GET_SIZE(list.get()));
    // Sized by the previous page's records, so the payload buffer is not regrown as it fills (up
    // to 16 MiB: a page of large records after a page of small ones grows it as usual).
    records.Reserve(count,
                    std::min(count * (payload_bytes_per_record_ + payload_bytes_per_record_ / 8),
                             size_t{16} << 20));
    // The size is read again at every step: a helper could run code that changes the list.
    for (Py_ssize_t index = 0; index < PyList_GET_SIZE(list.get()); ++index) {
      Ref record(Py_NewRef(PyList_GET_ITEM(list.get(), index)));
      if (!Py_IS_TYPE(record.get(), record_type)) return by_python();  // Subclasses too.
      python::RecordFields fields = python::ReadRecordFields(record.get());
      if (fields.id == nullptr || fields.data == nullptr || fields.destination_id == nullptr ||
          (fields.timestamp == nullptr && !fields.has_default_timestamp)) {
        return by_python();  // A deleted attribute: the reference raises its AttributeError.
      }
      Ref id(Py_NewRef(fields.id));
      Ref data(Py_NewRef(fields.data));
      Ref timestamp(Py_XNewRef(fields.timestamp));
      Ref destination(Py_NewRef(fields.destination_id));
      if (!PyUnicode_Check(id.get())) {
        if (!PyLong_Check(id.get()) || PyBool_Check(id.get())) return by_python();
        id = PyObject_Str(id.get());
        if (!id) return by_python();
      }
      if (!PyDict_Check(data.get())) return by_python();
      std::string& payloads = records.OpenPayload();
      size_t mark = payloads.size();
      if (!PyDict_CheckExact(data.get()) ||
          !python::JsonWriter(payloads, /*ensure_ascii=*/false, &json_keys_).Write(data.get())) {
        payloads.resize(mark);
        Ref text(
            PyObject_CallFunctionObjArgs(record_payload_.ptr(), id.get(), data.get(), nullptr));
        if (!text) throw py::error_already_set();
        std::optional<std::string_view> bytes = Utf8(text.get());
        if (!bytes) return by_python();
        payloads.append(*bytes);
      }
      int64_t stamp = fields.default_timestamp_us;
      if (timestamp) {
        std::optional<int64_t> micros = python::UtcMicros(timestamp.get());
        if (!micros) {
          Ref value(PyObject_CallFunctionObjArgs(record_micros_.ptr(), id.get(), timestamp.get(),
                                                 nullptr));
          if (!value) throw py::error_already_set();
          micros = PyLong_AsLongLong(value.get());
          if (*micros == -1 && PyErr_Occurred() != nullptr) return by_python();
        }
        stamp = *micros;
      }
      std::string_view destination_id;
      if (destination.get() != Py_None) {
        if (!PyUnicode_Check(destination.get())) return by_python();
        std::optional<std::string_view> bytes = Utf8(destination.get());
        if (!bytes) return by_python();
        destination_id = *bytes;
      }
      std::optional<std::string_view> id_bytes = Utf8(id.get());
      if (!id_bytes) return by_python();
      records.CommitPayload(*id_bytes, stamp, destination_id);
    }
    Ref next_state(PyObject_GetAttrString(returned, "next_state"));
    if (!next_state) return by_python();
    if (!records.empty()) payload_bytes_per_record_ = records.PayloadBytes() / records.size() + 1;
    pagination = py::reinterpret_steal<py::object>(next_pagination.release());
    state = py::reinterpret_steal<py::object>(next_state.release());
    return Converted::kDone;
  }

  // Appends the columns iteration_columns returned.
  static void AddColumns(const py::tuple& columns, RecordBatch& records) {
    PyObject* ids = columns[0].ptr();
    PyObject* payloads = columns[1].ptr();
    PyObject* stamps = columns[2].ptr();
    py::object destinations = columns[3];
    Py_ssize_t count = PyList_GET_SIZE(ids);
    size_t payload_bytes = 0;
    for (Py_ssize_t i = 0; i < count; ++i) {
      payload_bytes += static_cast<size_t>(PyUnicode_GET_LENGTH(PyList_GET_ITEM(payloads, i)));
    }
    records.Reserve(static_cast<size_t>(count), payload_bytes);
    for (Py_ssize_t i = 0; i < count; ++i) {
      int64_t timestamp = PyLong_AsLongLong(PyList_GET_ITEM(stamps, i));
      if (timestamp == -1 && PyErr_Occurred() != nullptr) throw py::error_already_set();
      std::string_view destination;
      if (!destinations.is_none()) {
        PyObject* item = PyList_GET_ITEM(destinations.ptr(), i);
        if (item != Py_None) destination = AsView(item);
      }
      records.Add(AsView(PyList_GET_ITEM(ids, i)), AsView(PyList_GET_ITEM(payloads, i)), timestamp,
                  destination);
    }
  }

  // The iteration's pagination and state as Values.
  Result<SourceIteration> Finish(SourceIteration iteration, const py::object& next_pagination,
                                 const py::object& next_state, std::string_view method) {
    auto pagination = python::FromPython(next_pagination, "next_pagination");
    if (!pagination) {
      return Fail(Status(StatusCode::kInvalidArgument,
                         fmt::format("custom source {}: {}() returned an unusable iteration: {}",
                                     class_name_, method, pagination.error().message()),
                         FailureClass::kSource));
    }
    iteration.next_pagination = std::move(*pagination);
    if (!next_state.is_none()) {
      auto state = python::FromPython(next_state, "next_state");
      if (!state) {
        return Fail(Status(StatusCode::kInvalidArgument,
                           fmt::format("custom source {}: {}() returned an unusable iteration: {}",
                                       class_name_, method, state.error().message()),
                           FailureClass::kSource));
      }
      iteration.next_state = std::move(*state);
    }
    return iteration;
  }

  py::object instance_;
  std::string class_name_;
  bool incremental_;
  PythonSourceOptions options_;
  /// The next_pagination of the last iteration fetched ({} once exhausted), which Commit()
  /// compares with what was recorded.
  std::optional<Value> latest_pagination_;
  py::object iteration_type_;    // bizon.source.models.SourceIteration.
  bool native_records_ = false;  // bizon.source.models.SourceRecord is the C type.
  py::object record_payload_;    // _bizon_runtime.record_payload and record_micros.
  py::object record_micros_;
  size_t payload_bytes_per_record_ = 64;  // Of the last page ConvertRecords converted.
  python::JsonKeyCache json_keys_;        // The payloads' repeated keys (ensure_ascii=False).
};

}  // namespace

Result<PythonSourceInfo> InspectPythonSource(const std::string& path,
                                             const std::string& source_name) {
  BIZON_RETURN_IF_ERROR(CheckFile(path));
  BIZON_RETURN_IF_ERROR(python::EnsureInterpreter());
  std::string context = fmt::format("custom source '{}' ({})", source_name, path);
  GilLock gil;
  try {
    py::list classes = python::Runtime().attr("inspect_source")(path);
    PythonSourceInfo info;
    for (py::handle entry : classes) {
      auto described = entry.cast<py::tuple>();
      auto class_name = described[0].cast<std::string>();
      bool incremental = described[2].cast<bool>();
      if (info.class_name.empty()) info.class_name = class_name;
      for (py::handle stream : described[1]) {
        auto name = stream.cast<std::string>();
        bool seen = false;
        for (const StreamSpec& spec : info.streams) seen = seen || spec.name == name;
        if (seen) continue;  // The first class that lists a stream serves it.
        info.streams.push_back({.name = name,
                                .supports_incremental = incremental,
                                .description = fmt::format("class {} in {}", class_name, path)});
      }
    }
    return info;
  } catch (py::error_already_set& error) {
    return Fail(LoadError(error, context));
  } catch (const std::exception& error) {
    return Fail(InternalError(fmt::format("{}: {}", context, error.what())));
  }
}

Result<std::unique_ptr<Source>> OpenPythonSource(const std::string& path,
                                                 const SourceContext& context,
                                                 const PythonSourceOptions& options) {
  BIZON_RETURN_IF_ERROR(CheckFile(path));
  BIZON_RETURN_IF_ERROR(python::EnsureInterpreter());
  std::string label = fmt::format("custom source file {}", path);
  GilLock gil;
  try {
    py::object config = python::ToPython(context.config);
    py::tuple opened;
    {
      python::CallScope scope(options.call_timeout);
      py::object streams =
          options.streams.is_list() ? python::ToPython(options.streams) : py::object(py::none());
      opened = python::Runtime().attr("open_source")(path, context.stream, config, streams);
    }
    auto class_name = opened[1].cast<std::string>();
    bool incremental = opened[2].cast<bool>();
    if (context.sync_mode == SyncMode::kIncremental && !incremental) {
      return Fail(InvalidArgumentError(fmt::format(
          "source.sync_mode: stream '{}' of {} (class {}) does not support incremental sync, "
          "because the class does not override get_records_after; use full_refresh",
          context.stream, label, class_name)));
    }
    return std::unique_ptr<Source>(
        std::make_unique<PythonSource>(opened[0], std::move(class_name), incremental, options));
  } catch (py::error_already_set& error) {
    python::PythonError described = python::DescribeError(error);
    if (described.lookup) {
      return Fail(Status(StatusCode::kNotFound, described.summary, FailureClass::kConfig));
    }
    if (described.contract) {
      return Fail(Status(StatusCode::kInvalidArgument,
                         fmt::format("{}: {}", label, described.summary), FailureClass::kConfig));
    }
    return Fail(python::ErrorStatus(described, fmt::format("{}: loading raised", label),
                                    StatusCode::kUnavailable, FailureClass::kSource,
                                    options.call_timeout));
  } catch (const std::exception& error) {
    return Fail(InternalError(fmt::format("{}: {}", label, error.what())));
  }
}

}  // namespace bizon
