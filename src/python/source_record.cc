#include "python/source_record.h"

// The datetime C API: PyDateTime_IMPORT fills a static of this translation unit, so every use
// of it stays in this file.
#include <datetime.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "bizon/clock.h"

namespace bizon::python {
namespace {

struct RecordObject {
  PyObject_HEAD PyObject* id;
  PyObject* data;
  PyObject* timestamp;  // Null while the default is pending, or after `del record.timestamp`.
  PyObject* destination_id;
  int64_t default_timestamp_us;
  bool has_default_timestamp;
};

RecordObject* AsRecord(PyObject* object) { return reinterpret_cast<RecordObject*>(object); }

// A heap type, as a Python class is: its tp_name is the bare "SourceRecord" of the Python class's
// messages ("'SourceRecord' object has no attribute 'x'", "unhashable type: 'SourceRecord'")
// while __module__ stays bizon.source.models (pickle finds it). Owned for the life of the process.
PyTypeObject* record_type = nullptr;

// Interned argument names, and collections.abc.Mapping. Owned by the module for the life of the
// process.
PyObject* id_name = nullptr;
PyObject* data_name = nullptr;
PyObject* timestamp_name = nullptr;
PyObject* destination_id_name = nullptr;
PyObject* mapping_type = nullptr;

// The type's __name__, for messages (type(x).__name__): a new reference, or null with an error.
PyObject* TypeName(PyObject* object) { return PyType_GetName(Py_TYPE(object)); }

// --- Construction -------------------------------------------------------------------------------

struct Arguments {
  PyObject* id = nullptr;  // Borrowed; null when not passed.
  PyObject* data = nullptr;
  PyObject* timestamp = nullptr;
  PyObject* destination_id = nullptr;
};

// Python's TypeError for positional arguments to __init__ (`self, *, id, data, ...`), raised
// after the keywords are bound, as Python does.
void TooManyPositional(Py_ssize_t given, const Arguments& arguments) {
  int keywords = (arguments.id != nullptr) + (arguments.data != nullptr) +
                 (arguments.timestamp != nullptr) + (arguments.destination_id != nullptr);
  if (keywords == 0) {
    PyErr_Format(PyExc_TypeError,
                 "SourceRecord.__init__() takes 1 positional argument but %zd were given",
                 given + 1);
    return;
  }
  PyErr_Format(PyExc_TypeError,
               "SourceRecord.__init__() takes 1 positional argument but %zd positional arguments "
               "(and %d keyword-only argument%s) were given",
               given + 1, keywords, keywords == 1 ? "" : "s");
}

// Binds one keyword argument; false with TypeError for a name __init__ does not take.
bool Bind(Arguments& arguments, PyObject* name, PyObject* value) {
  PyObject** slot = nullptr;
  // Keyword names in calls are interned: the pointer test nearly always decides.
  if (name == id_name) {
    slot = &arguments.id;
  } else if (name == data_name) {
    slot = &arguments.data;
  } else if (name == timestamp_name) {
    slot = &arguments.timestamp;
  } else if (name == destination_id_name) {
    slot = &arguments.destination_id;
  } else if (PyUnicode_Check(name)) {
    if (PyUnicode_Compare(name, id_name) == 0) {
      slot = &arguments.id;
    } else if (PyUnicode_Compare(name, data_name) == 0) {
      slot = &arguments.data;
    } else if (PyUnicode_Compare(name, timestamp_name) == 0) {
      slot = &arguments.timestamp;
    } else if (PyUnicode_Compare(name, destination_id_name) == 0) {
      slot = &arguments.destination_id;
    }
  }
  if (slot == nullptr) {
    PyErr_Format(PyExc_TypeError, "SourceRecord.__init__() got an unexpected keyword argument '%S'",
                 name);
    return false;
  }
  if (*slot != nullptr) {
    PyErr_Format(PyExc_TypeError, "SourceRecord.__init__() got multiple values for argument '%S'",
                 name);
    return false;
  }
  *slot = value;
  return true;
}

// bizon.source.models._timestamp(value, "SourceRecord"): the coercion of an int, float or str
// timestamp (and the error for anything else), kept in Python where the reference lives.
PyObject* CoerceTimestamp(PyObject* value) {
  Ref models(PyImport_ImportModule("bizon.source.models"));
  if (!models) return nullptr;
  Ref coerce(PyObject_GetAttrString(models.get(), "_timestamp"));
  if (!coerce) return nullptr;
  Ref owner(PyUnicode_FromString("SourceRecord"));
  if (!owner) return nullptr;
  return PyObject_CallFunctionObjArgs(coerce.get(), value, owner.get(), nullptr);
}

// SourceRecord.__init__ after binding: the Python class's checks, in its order, with its texts.
int Initialise(RecordObject* self, const Arguments& arguments) {
  if (arguments.id == nullptr || arguments.data == nullptr) {
    const char* missing = arguments.id != nullptr     ? "data"
                          : arguments.data != nullptr ? "id"
                                                      : "id, data";
    PyErr_Format(PyExc_ValueError, "SourceRecord: missing required field(s) %s", missing);
    return -1;
  }
  Ref id;
  if (PyLong_Check(arguments.id) && !PyBool_Check(arguments.id)) {
    id = PyObject_Str(arguments.id);
    if (!id) return -1;
  } else if (PyUnicode_Check(arguments.id)) {
    id = Py_NewRef(arguments.id);
  } else {
    Ref name(TypeName(arguments.id));
    if (name) {
      PyErr_Format(PyExc_ValueError, "SourceRecord.id must be a string or an integer, got %U %R",
                   name.get(), arguments.id);
    }
    return -1;
  }
  if (!PyDict_Check(arguments.data)) {
    int is_mapping = PyObject_IsInstance(arguments.data, mapping_type);
    if (is_mapping < 0) return -1;
    if (is_mapping == 0) {
      Ref name(TypeName(arguments.data));
      if (name) {
        PyErr_Format(PyExc_ValueError, "SourceRecord.data must be a mapping (a dict), got %U",
                     name.get());
      }
      return -1;
    }
  }
  PyObject* destination = arguments.destination_id;
  if (destination != nullptr && destination != Py_None && !PyUnicode_Check(destination)) {
    Ref name(TypeName(destination));
    if (name) {
      PyErr_Format(PyExc_ValueError, "SourceRecord.destination_id must be a string or None, got %U",
                   name.get());
    }
    return -1;
  }
  // Assigned in the Python class's order: id and data are set even when the timestamp then fails.
  Py_XSETREF(self->id, id.release());
  Py_XSETREF(self->data, Py_NewRef(arguments.data));
  PyObject* timestamp = arguments.timestamp;
  if (timestamp == nullptr || timestamp == Py_None) {
    Py_CLEAR(self->timestamp);
    self->default_timestamp_us = NowMicros();  // datetime.now(timezone.utc), made when read.
    self->has_default_timestamp = true;
  } else {
    PyObject* coerced =
        PyDateTime_Check(timestamp) ? Py_NewRef(timestamp) : CoerceTimestamp(timestamp);
    if (coerced == nullptr) return -1;
    Py_XSETREF(self->timestamp, coerced);
    self->has_default_timestamp = false;
  }
  Py_XSETREF(self->destination_id, Py_NewRef(destination != nullptr ? destination : Py_None));
  return 0;
}

PyObject* RecordNew(PyTypeObject* type, PyObject* /*args*/, PyObject* /*kwargs*/) {
  return type->tp_alloc(type, 0);
}

int RecordInit(PyObject* self, PyObject* args, PyObject* kwargs) {
  Arguments arguments;
  if (kwargs != nullptr) {
    Py_ssize_t position = 0;
    PyObject* name = nullptr;
    PyObject* value = nullptr;
    while (PyDict_Next(kwargs, &position, &name, &value)) {
      if (!Bind(arguments, name, value)) return -1;
    }
  }
  if (PyTuple_GET_SIZE(args) > 0) {
    TooManyPositional(PyTuple_GET_SIZE(args), arguments);
    return -1;
  }
  return Initialise(AsRecord(self), arguments);
}

// SourceRecord(id=..., data=...) without a kwargs dict: the type's own vectorcall (never
// inherited, so subclasses go through __new__ and __init__).
PyObject* RecordVectorcall(PyObject* type, PyObject* const* args, size_t nargsf,
                           PyObject* kwnames) {
  Py_ssize_t positional = PyVectorcall_NARGS(nargsf);
  auto* record_class = reinterpret_cast<PyTypeObject*>(type);
  if (record_class->tp_init != RecordInit || record_class->tp_new != RecordNew) {
    // SourceRecord.__init__ (or __new__) was replaced: call them as type.__call__ does.
    Ref tuple(PyTuple_New(positional));
    Ref keywords(kwnames != nullptr ? PyDict_New() : nullptr);
    if (!tuple || (kwnames != nullptr && !keywords)) return nullptr;
    for (Py_ssize_t i = 0; i < positional; ++i) {
      PyTuple_SET_ITEM(tuple.get(), i, Py_NewRef(args[i]));
    }
    for (Py_ssize_t i = 0; kwnames != nullptr && i < PyTuple_GET_SIZE(kwnames); ++i) {
      if (PyDict_SetItem(keywords.get(), PyTuple_GET_ITEM(kwnames, i), args[positional + i]) < 0) {
        return nullptr;
      }
    }
    return PyType_Type.tp_call(type, tuple.get(), keywords.get());
  }
  Arguments arguments;
  if (kwnames != nullptr) {
    Py_ssize_t count = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < count; ++i) {
      if (!Bind(arguments, PyTuple_GET_ITEM(kwnames, i), args[positional + i])) return nullptr;
    }
  }
  if (positional > 0) {
    TooManyPositional(positional, arguments);
    return nullptr;
  }
  Ref self(record_class->tp_alloc(record_class, 0));
  if (!self || Initialise(AsRecord(self.get()), arguments) < 0) return nullptr;
  return self.release();
}

// --- Lifetime -----------------------------------------------------------------------------------

int RecordTraverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));  // Instances of a heap type hold their type.
  RecordObject* record = AsRecord(self);
  Py_VISIT(record->id);
  Py_VISIT(record->data);
  Py_VISIT(record->timestamp);
  Py_VISIT(record->destination_id);
  return 0;
}

int RecordClear(PyObject* self) {
  RecordObject* record = AsRecord(self);
  Py_CLEAR(record->id);
  Py_CLEAR(record->data);
  Py_CLEAR(record->timestamp);
  Py_CLEAR(record->destination_id);
  record->has_default_timestamp = false;
  return 0;
}

void RecordDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  RecordClear(self);
  type->tp_free(self);
  Py_DECREF(type);  // A subclass's instance: subtype_dealloc leaves its type to us.
}

// --- Attributes ---------------------------------------------------------------------------------

// The datetime of the pending default timestamp.
PyObject* DefaultTimestamp(int64_t micros) {
  UtcTime t = SplitUtc(micros);
  return PyDateTimeAPI->DateTime_FromDateAndTime(
      t.year, t.month, t.day, t.hour, t.minute, t.second, static_cast<int>(t.microsecond),
      PyDateTime_TimeZone_UTC, PyDateTimeAPI->DateTimeType);
}

// The slot of attribute `closure` (an offset into RecordObject).
PyObject** Slot(PyObject* self, void* closure) {
  return reinterpret_cast<PyObject**>(reinterpret_cast<char*>(self) +
                                      reinterpret_cast<std::ptrdiff_t>(closure));
}

const char* SlotName(void* closure) {
  auto offset = reinterpret_cast<std::ptrdiff_t>(closure);
  if (offset == offsetof(RecordObject, id)) return "id";
  if (offset == offsetof(RecordObject, data)) return "data";
  if (offset == offsetof(RecordObject, timestamp)) return "timestamp";
  return "destination_id";
}

// Reading an unset slot: the AttributeError of a __slots__ attribute.
PyObject* Unset(PyObject* self, void* closure) {
  Ref name(TypeName(self));
  if (name) {
    PyErr_Format(PyExc_AttributeError, "'%U' object has no attribute '%s'", name.get(),
                 SlotName(closure));
  }
  return nullptr;
}

PyObject* GetSlot(PyObject* self, void* closure) {
  PyObject* value = *Slot(self, closure);
  if (value == nullptr) {
    RecordObject* record = AsRecord(self);
    if (reinterpret_cast<std::uintptr_t>(closure) != offsetof(RecordObject, timestamp) ||
        !record->has_default_timestamp) {
      return Unset(self, closure);
    }
    value = DefaultTimestamp(record->default_timestamp_us);
    if (value == nullptr) return nullptr;
    record->timestamp = value;  // Kept: every later read returns this very object.
    record->has_default_timestamp = false;
  }
  return Py_NewRef(value);
}

int SetSlot(PyObject* self, PyObject* value, void* closure) {
  PyObject** slot = Slot(self, closure);
  RecordObject* record = AsRecord(self);
  bool pending_default =
      reinterpret_cast<std::uintptr_t>(closure) == offsetof(RecordObject, timestamp) &&
      record->has_default_timestamp;
  if (value == nullptr && *slot == nullptr && !pending_default) {
    PyErr_SetString(PyExc_AttributeError, SlotName(closure));  // As `del` of an unset slot.
    return -1;
  }
  if (pending_default) record->has_default_timestamp = false;
  Py_XSETREF(*slot, Py_XNewRef(value));
  return 0;
}

/// A slot's offset as a getset closure: CPython hands it back to GetSlot/SetSlot as is.
void* Offset(size_t offset) {
  return reinterpret_cast<void*>(offset);  // NOLINT(performance-no-int-to-ptr): never dereferenced.
}

PyGetSetDef record_getset[] = {
    {"id", GetSlot, SetSlot, nullptr, Offset(offsetof(RecordObject, id))},
    {"data", GetSlot, SetSlot, nullptr, Offset(offsetof(RecordObject, data))},
    {"timestamp", GetSlot, SetSlot, nullptr, Offset(offsetof(RecordObject, timestamp))},
    {"destination_id", GetSlot, SetSlot, nullptr, Offset(offsetof(RecordObject, destination_id))},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// --- Methods ------------------------------------------------------------------------------------

constexpr const char* kFieldNames[] = {"id", "data", "timestamp", "destination_id"};

PyObject* ModelDump(PyObject* self, PyObject* /*unused*/) {
  Ref dump(PyDict_New());
  if (!dump) return nullptr;
  for (const char* name : kFieldNames) {
    Ref value(PyObject_GetAttrString(self, name));
    if (!value || PyDict_SetItemString(dump.get(), name, value.get()) < 0) return nullptr;
  }
  return dump.release();
}

// (instance __dict__ or None, {slot: value}) as object.__getstate__ gives for a __slots__ class:
// copy.copy, copy.deepcopy and pickle rebuild the record with __new__ and setattr.
PyObject* GetState(PyObject* self, PyObject* /*unused*/) {
  Ref slots(PyDict_New());
  if (!slots) return nullptr;
  for (const char* name : kFieldNames) {
    Ref value(PyObject_GetAttrString(self, name));
    if (!value) {
      if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return nullptr;
      PyErr_Clear();  // An unset slot is left out.
      continue;
    }
    if (PyDict_SetItemString(slots.get(), name, value.get()) < 0) return nullptr;
  }
  Ref state(PyObject_GetAttrString(self, "__dict__"));  // A subclass's instance attributes.
  if (!state) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return nullptr;
    PyErr_Clear();
  }
  if (!state || (PyDict_Check(state.get()) && PyDict_Size(state.get()) == 0)) {
    state = Py_NewRef(Py_None);
  }
  return PyTuple_Pack(2, state.get(), slots.get());
}

PyMethodDef record_methods[] = {
    {"model_dump", ModelDump, METH_NOARGS, "{id, data, timestamp, destination_id}"},
    {"dict", ModelDump, METH_NOARGS, "model_dump()"},
    {"__getstate__", GetState, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyObject* RecordRepr(PyObject* self) {
  Ref values[4];
  for (size_t i = 0; i < 4; ++i) {
    values[i] = PyObject_GetAttrString(self, kFieldNames[i]);
    if (!values[i]) return nullptr;
  }
  return PyUnicode_FromFormat("SourceRecord(id=%R, data=%R, timestamp=%R, destination_id=%R)",
                              values[0].get(), values[1].get(), values[2].get(), values[3].get());
}

// __eq__: `isinstance(other, SourceRecord) and self.model_dump() == other.model_dump()`;
// __ne__ is its negation, as object.__ne__ gives.
PyObject* RecordCompare(PyObject* self, PyObject* other, int op) {
  if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
  Ref equal;
  if (!PyObject_TypeCheck(other, record_type)) {
    equal = Py_NewRef(Py_False);
  } else {
    Ref mine(PyObject_CallMethod(self, "model_dump", nullptr));
    if (!mine) return nullptr;
    Ref theirs(PyObject_CallMethod(other, "model_dump", nullptr));
    if (!theirs) return nullptr;
    equal = PyObject_RichCompare(mine.get(), theirs.get(), Py_EQ);
    if (!equal) return nullptr;
  }
  if (op == Py_EQ) return equal.release();
  int truth = PyObject_IsTrue(equal.get());
  if (truth < 0) return nullptr;
  return PyBool_FromLong(truth == 0);
}

// first_not_instance(items, cls): the index of the first element of the list `items` that is not
// an instance of `cls` (isinstance), or -1. SourceIteration checks its records with it.
PyObject* FirstNotInstance(PyObject* /*module*/, PyObject* const* args, Py_ssize_t count) {
  if (count != 2 || !PyList_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "first_not_instance(items: list, cls)");
    return nullptr;
  }
  PyObject* items = args[0];
  // The size is read at every step: an isinstance check may run code (a __class__ property).
  for (Py_ssize_t index = 0; index < PyList_GET_SIZE(items); ++index) {
    Ref item(Py_NewRef(PyList_GET_ITEM(items, index)));
    int is_instance = PyObject_IsInstance(item.get(), args[1]);
    if (is_instance < 0) return nullptr;
    if (is_instance == 0) return PyLong_FromSsize_t(index);
  }
  return PyLong_FromLong(-1);
}

PyMethodDef module_functions[] = {
    // METH_FASTCALL functions are stored as a PyCFunction, as CPython documents; GCC warns on a
    // direct cast between the two function types.
    {"first_not_instance",
     // NOLINTNEXTLINE(bugprone-casting-through-void)
     reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(FirstNotInstance)), METH_FASTCALL,
     "The index of the first element of a list that is not an instance of cls, or -1."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef native_module{
    PyModuleDef_HEAD_INIT,
    "_bizon_native",
    "C types of the bizon compatibility package, compiled into the bizon binary.",
    -1,
    module_functions,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

bool PrepareType() {
  static PyType_Slot slots[] = {
      {Py_tp_doc, const_cast<char*>(
                      "One row: `id` (a string; an int is converted), `data` (a JSON-serialisable "
                      "mapping), `timestamp` (default: now, UTC) and `destination_id` (stream "
                      "routing, default None).")},
      {Py_tp_new, reinterpret_cast<void*>(RecordNew)},
      {Py_tp_init, reinterpret_cast<void*>(RecordInit)},
      {Py_tp_dealloc, reinterpret_cast<void*>(RecordDealloc)},
      {Py_tp_traverse, reinterpret_cast<void*>(RecordTraverse)},
      {Py_tp_clear, reinterpret_cast<void*>(RecordClear)},
      {Py_tp_repr, reinterpret_cast<void*>(RecordRepr)},
      {Py_tp_richcompare, reinterpret_cast<void*>(RecordCompare)},
      // __eq__ without __hash__: unhashable, as the Python class.
      {Py_tp_hash, reinterpret_cast<void*>(PyObject_HashNotImplemented)},
      {Py_tp_getset, record_getset},
      {Py_tp_methods, record_methods},
      {0, nullptr},
  };
  static PyType_Spec spec = {
      .name = "bizon.source.models.SourceRecord",
      .basicsize = static_cast<int>(sizeof(RecordObject)),
      .itemsize = 0,
      .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
      .slots = slots,
  };
  Ref type(PyType_FromSpec(&spec));
  if (!type) return false;
  auto* created = reinterpret_cast<PyTypeObject*>(type.get());
  // SourceRecord(...) without a kwargs dict. Never inherited: subclasses use __new__/__init__.
  created->tp_vectorcall = RecordVectorcall;
  Ref name(PyUnicode_FromString("SourceRecord"));
  Ref slot_names(Py_BuildValue("(ssss)", "id", "data", "timestamp", "destination_id"));
  if (!name || !slot_names || PyObject_SetAttrString(type.get(), "__name__", name.get()) < 0 ||
      PyObject_SetAttrString(type.get(), "__slots__", slot_names.get()) < 0) {
    return false;
  }
  record_type = reinterpret_cast<PyTypeObject*>(type.release());
  return true;
}

}  // namespace

bool InstallNativeModule() {
  PyDateTime_IMPORT;
  if (PyDateTimeAPI == nullptr) return false;
  if (record_type == nullptr && !PrepareType()) return false;
  id_name = PyUnicode_InternFromString("id");
  data_name = PyUnicode_InternFromString("data");
  timestamp_name = PyUnicode_InternFromString("timestamp");
  destination_id_name = PyUnicode_InternFromString("destination_id");
  if (id_name == nullptr || data_name == nullptr || timestamp_name == nullptr ||
      destination_id_name == nullptr) {
    return false;
  }
  Ref abc(PyImport_ImportModule("collections.abc"));
  if (!abc) return false;
  mapping_type = PyObject_GetAttrString(abc.get(), "Mapping");
  if (mapping_type == nullptr) return false;
  Ref module(PyModule_Create(&native_module));
  if (!module || PyModule_AddObjectRef(module.get(), "SourceRecord",
                                       reinterpret_cast<PyObject*>(record_type)) < 0) {
    return false;
  }
  return PyDict_SetItemString(PyImport_GetModuleDict(), "_bizon_native", module.get()) == 0;
}

PyTypeObject* SourceRecordType() { return record_type; }

RecordFields ReadRecordFields(PyObject* record) {
  RecordObject* fields = AsRecord(record);
  return {.id = fields->id,
          .data = fields->data,
          .timestamp = fields->timestamp,
          .destination_id = fields->destination_id,
          .has_default_timestamp = fields->has_default_timestamp,
          .default_timestamp_us = fields->default_timestamp_us};
}

// The datetime field macros are C casts.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
std::optional<int64_t> UtcMicros(PyObject* value) {
  if (!PyDateTime_CheckExact(value)) return std::nullopt;
  PyObject* zone = PyDateTime_DATE_GET_TZINFO(value);
  if (zone != Py_None && zone != PyDateTime_TimeZone_UTC) return std::nullopt;
  using std::chrono::day;
  using std::chrono::month;
  using std::chrono::year;
  std::chrono::sys_days date = std::chrono::year_month_day(
      year(PyDateTime_GET_YEAR(value)), month(static_cast<unsigned>(PyDateTime_GET_MONTH(value))),
      day(static_cast<unsigned>(PyDateTime_GET_DAY(value))));
  int64_t seconds = static_cast<int64_t>(date.time_since_epoch().count()) * 86'400 +
                    PyDateTime_DATE_GET_HOUR(value) * 3'600 +
                    PyDateTime_DATE_GET_MINUTE(value) * 60 + PyDateTime_DATE_GET_SECOND(value);
  return seconds * 1'000'000 + PyDateTime_DATE_GET_MICROSECOND(value);
}
#pragma GCC diagnostic pop

}  // namespace bizon::python
