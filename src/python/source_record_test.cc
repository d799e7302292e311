#include "python/source_record.h"

#include <gtest/gtest.h>

#include <string>

namespace bizon::python {
namespace {

class PythonSourceRecordTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(EnsureInterpreter().ok()); }

  // Runs `code` (asserts) in a fresh namespace; a failure shows Python's traceback.
  static void Check(const char* code) {
    GilLock gil;
    try {
      py::dict scope;
      scope["__builtins__"] = py::module_::import("builtins");
      py::exec(code, scope);
    } catch (py::error_already_set& error) {
      ADD_FAILURE() << error.what();
    }
  }
};

TEST_F(PythonSourceRecordTest, ModelsExportTheCTypeAndKeepThePythonReference) {
  Check(R"PY(
from bizon.source import models
import _bizon_native
assert models.SourceRecord is _bizon_native.SourceRecord
assert models._PythonSourceRecord is not models.SourceRecord
assert models.SourceRecord.__module__ == "bizon.source.models"
assert models.SourceRecord.__name__ == models.SourceRecord.__qualname__ == "SourceRecord"
assert models.SourceRecord.__slots__ == models._PythonSourceRecord.__slots__
)PY");
}

// Every construction gives what the Python class gives: the same fields, or the same exception
// with the same text.
TEST_F(PythonSourceRecordTest, ValidatesExactlyAsThePythonClass) {
  Check(R"PY(
import types
from datetime import datetime, timedelta, timezone
from bizon.source.models import SourceRecord as Native, _PythonSourceRecord as Reference

class IntId(int):
    def __str__(self):
        return "int-subclass"

class StrId(str):
    pass

now = datetime(2024, 5, 6, 7, 8, 9, 10, tzinfo=timezone.utc)

def outcome(cls, args, kwargs):
    try:
        record = cls(*args, **kwargs)
    except Exception as exc:
        return type(exc), str(exc)
    dump = record.model_dump()
    if kwargs.get("timestamp") is None:
        assert dump.pop("timestamp").tzinfo is timezone.utc
    return dump, type(record.id)

cases = [
    {"id": "a", "data": {"x": 1}, "timestamp": now},
    {"id": 7, "data": {}, "timestamp": now},
    {"id": -(10**30), "data": {}},
    {"id": IntId(3), "data": {}},
    {"id": StrId("s"), "data": {}},
    {"id": True, "data": {}},
    {"id": 1.5, "data": {}},
    {"id": None, "data": {}},
    {"id": b"x", "data": {}},
    {"id": "a", "data": [1]},
    {"id": "a", "data": None},
    {"id": "a", "data": types.MappingProxyType({"k": 1})},
    {"id": "a", "data": type("D", (dict,), {})(k=1)},
    {"id": "a"},
    {"data": {}},
    {},
    {"id": "a", "data": {}, "destination_id": 5},
    {"id": "a", "data": {}, "destination_id": "table"},
    {"id": "a", "data": {}, "destination_id": None},
    {"id": "a", "data": {}, "timestamp": None},
    {"id": "a", "data": {}, "timestamp": datetime(2024, 1, 1)},
    {"id": "a", "data": {}, "timestamp": datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=2)))},
    {"id": "a", "data": {}, "timestamp": 1700000000},
    {"id": "a", "data": {}, "timestamp": 1700000000.25},
    {"id": "a", "data": {}, "timestamp": "2024-01-02T03:04:05Z"},
    {"id": "a", "data": {}, "timestamp": "2024-01-02 03:04:05+01:00"},
    {"id": "a", "data": {}, "timestamp": "not a date"},
    {"id": "a", "data": {}, "timestamp": True},
    {"id": "a", "data": {}, "timestamp": b"x"},
    {"id": "a", "data": {}, "timestamp": 10**30},
    {"id": "a", "data": {}, "unknown": 1},
    {"id": 5, "data": [], "destination_id": 5},
]
for kwargs in cases:
    native, reference = outcome(Native, (), kwargs), outcome(Reference, (), kwargs)
    assert native == reference, (kwargs, native, reference)
for args in [(1,), (1, 2)]:
    for kwargs in [{}, {"id": "a"}, {"id": "a", "data": {}}, {"id": "a", "bad": 1}]:
        native, reference = outcome(Native, args, kwargs), outcome(Reference, args, kwargs)
        assert native == reference, (args, kwargs, native, reference)
# __new__ then __init__ (tp_init's path, not vectorcall's).
record = Native.__new__(Native)
record.__init__(**{"id": 9, "data": {"k": "v"}, "timestamp": now})
assert record.model_dump() == {"id": "9", "data": {"k": "v"}, "timestamp": now, "destination_id": None}
)PY");
}

TEST_F(PythonSourceRecordTest, DefaultTimestampIsTheConstructionTimeAndStable) {
  Check(R"PY(
import time
from datetime import datetime, timezone
from bizon.source.models import SourceRecord

before = datetime.now(timezone.utc)
record = SourceRecord(id="a", data={})
explicit_none = SourceRecord(id="b", data={}, timestamp=None)
after = datetime.now(timezone.utc)
time.sleep(0.01)
stamp = record.timestamp
assert type(stamp) is datetime and stamp.tzinfo is timezone.utc, repr(stamp)
assert before <= stamp <= after, (before, stamp, after)
assert record.timestamp is stamp  # Made once, then kept.
assert before <= explicit_none.timestamp <= after
assert record.model_dump()["timestamp"] is stamp
fresh = SourceRecord(id="c", data={})
del fresh.timestamp
try:
    fresh.timestamp
    raise AssertionError("read a deleted timestamp")
except AttributeError as exc:
    assert str(exc) == "'SourceRecord' object has no attribute 'timestamp'", str(exc)
fresh = SourceRecord(id="c", data={})
fresh.timestamp = "replaced"
assert fresh.timestamp == "replaced"
)PY");
}

// Attribute access, repr, equality, hashing, copy and pickle behave as the Python class's.
TEST_F(PythonSourceRecordTest, BehavesAsThePythonClass) {
  Check(R"PY(
import copy, pickle
from datetime import datetime, timezone
from bizon.source.models import SourceRecord as Native, _PythonSourceRecord as Reference

now = datetime(2024, 5, 6, 7, 8, 9, 10, tzinfo=timezone.utc)

def attempt(action):
    try:
        return "ok", action()
    except Exception as exc:
        return type(exc), str(exc)

for cls in (Native, Reference):
    record = cls(id="a", data={"k": [1]}, timestamp=now, destination_id="t")
    assert repr(record) == ("SourceRecord(id='a', data={'k': [1]}, timestamp=datetime.datetime(2024, 5, 6, "
                            "7, 8, 9, 10, tzinfo=datetime.timezone.utc), destination_id='t')"), repr(record)
    assert record.dict() == record.model_dump() == {"id": "a", "data": {"k": [1]}, "timestamp": now,
                                                   "destination_id": "t"}

def behaviour(cls):
    record = cls(id="a", data={"k": 1}, timestamp=now)
    same = cls(id="a", data={"k": 1}, timestamp=now)
    other = cls(id="b", data={"k": 1}, timestamp=now)
    results = [record == same, record != same, record == other, record != other, record == 1,
               record != 1, 1 == record, record == record.model_dump()]
    results.append(attempt(lambda: hash(record)))
    results.append(attempt(lambda: record.unknown))
    results.append(attempt(lambda: setattr(record, "unknown", 1)))
    record.id = 5  # Not validated, as __slots__ attributes.
    record.data = "text"
    results.append((record.id, record.data))
    del record.destination_id
    results.append(attempt(lambda: record.destination_id))
    results.append(attempt(lambda: delattr(record, "destination_id")))
    results.append(attempt(lambda: repr(record)))
    record.destination_id = "d"
    copied, deep = copy.copy(record), copy.deepcopy(record)
    results.append((type(copied) is cls, copied.model_dump(), deep.model_dump() == record.model_dump()))
    return results

native, reference = behaviour(Native), behaviour(Reference)
assert native == reference, (native, reference)

record = Native(id="p", data={"nested": [1, 2]}, timestamp=now)
assert pickle.loads(pickle.dumps(record)) == record
)PY");
}

TEST_F(PythonSourceRecordTest, SubclassesUseTheirOwnInitAndAttributes) {
  Check(R"PY(
from datetime import datetime, timezone
from bizon.source.models import SourceIteration, SourceRecord

now = datetime(2024, 5, 6, tzinfo=timezone.utc)

class Tagged(SourceRecord):
    def __init__(self, *, tag, **kwargs):
        super().__init__(**kwargs)
        self.tag = tag

record = Tagged(tag="t", id=2, data={"k": 1}, timestamp=now)
assert isinstance(record, SourceRecord) and record.id == "2" and record.tag == "t"
assert record == SourceRecord(id="2", data={"k": 1}, timestamp=now)
assert repr(record).startswith("SourceRecord(id='2'")
copied = __import__("copy").copy(record)
assert copied.tag == "t" and copied.id == "2"

class Plain(SourceRecord):
    pass

try:
    Plain(id=None, data={})
    raise AssertionError("accepted a None id")
except ValueError as exc:
    assert str(exc) == "SourceRecord.id must be a string or an integer, got NoneType None", str(exc)
assert Plain(id=1, data={}).timestamp.tzinfo is timezone.utc

class Slotted(SourceRecord):
    __slots__ = ("extra",)

slotted = Slotted(id="s", data={})
slotted.extra = 1
assert not hasattr(slotted, "__dict__")
assert SourceIteration(next_pagination={}, records=[record, slotted]).records[1] is slotted

# A cycle through data is collected (the type takes part in garbage collection).
import gc, weakref
class Holder(dict):
    pass
holder = Holder()
cyclic = SourceRecord(id="c", data=holder)
holder["self"] = cyclic
probe = weakref.ref(holder)
del holder, cyclic
gc.collect()
assert probe() is None
)PY");
}

TEST_F(PythonSourceRecordTest, IterationChecksEveryRecord) {
  Check(R"PY(
from bizon.source import models
from bizon.source.models import SourceIteration, SourceRecord

records = [SourceRecord(id=str(i), data={}) for i in range(3)]
assert SourceIteration(next_pagination={}, records=tuple(records)).records == records
for bad, name in [(None, "NoneType"), (models._PythonSourceRecord(id="p", data={}), "SourceRecord")]:
    try:
        SourceIteration(next_pagination={}, records=records[:2] + [bad] + records[2:])
        raise AssertionError("accepted " + name)
    except ValueError as exc:
        assert str(exc) == f"SourceIteration.records[2] must be a SourceRecord, got {name}", str(exc)

# A mapping becomes the SourceRecord of its keys, as the original's model converts it (other keys
# ignored); one that does not make a record says which.
converted = SourceIteration(next_pagination={}, records=records[:2] + [{"id": 7, "data": {"k": 1}, "other": 0}])
assert type(converted.records[2]) is SourceRecord and converted.records[2].id == "7"
assert converted.records[2].data == {"k": 1} and converted.records[:2] == records[:2]
try:
    SourceIteration(next_pagination={}, records=records[:2] + [{"id": 1}])
    raise AssertionError("accepted a mapping without data")
except ValueError as exc:
    assert str(exc) == "SourceIteration.records[2]: SourceRecord: missing required field(s) data", str(exc)

# The C loop against the Python one, with an element whose isinstance check empties the list.
class Sneaky:
    @property
    def __class__(self):
        items.clear()
        return int

for first_not_instance in (models._first_not_instance, __import__("_bizon_native").first_not_instance):
    items = [1, Sneaky(), 2, 3]
    assert first_not_instance(items, int) == -1 and items == []
    assert first_not_instance([1, True, "x"], int) == 2
    assert first_not_instance([], int) == -1
)PY");
}

}  // namespace
}  // namespace bizon::python
