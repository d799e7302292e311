#include "python/json_writer.h"

#include <gtest/gtest.h>

#include <string>

namespace bizon::python {
namespace {

// Which modes JsonWriter writes a value in itself; in the others it must decline (return false),
// so the caller asks json.
enum class Writes { kBoth, kAsciiOnly, kNeither };

struct Case {
  const char* python;  // An expression, evaluated with `json` and `datetime` imported.
  Writes writes = Writes::kBoth;
};

// A table of tricky values: JsonWriter's bytes must be json.dumps's, with and without
// ensure_ascii, wherever it writes them.
const Case kCases[] = {
    {"{}"},
    {"[]"},
    {"()"},
    {"{'a': [], 'b': {}, 'c': ()}"},
    {"'plain text'"},
    {"''"},
    {"'\\x00\\x01\\x08\\x0b\\x0e\\x1f\\x7f'"},
    {"'\"quoted\" back\\\\slash /slash \\b\\f\\n\\r\\t'"},
    {"'\\xe9l\\xe0n \\xff'"},            // Latin-1 storage.
    {"'forêt 北极熊 \\u2028 \\ufeff'"},  // Two-byte storage.
    {"'a\\U0001f600b \\U0010ffff'"},     // Four-byte storage: surrogate pairs when ASCII.
    {"'mixed \\n é \\x1f 😀 \\\\'"},
    {"'x' * 203"},  // Long ASCII strings: read eight characters at a time.
    {"'a' * 13 + '\"' + 'b' * 20 + '\\x7f' + 'c' * 9 + '\\n' + 'd' * 7 + '\\\\'"},
    {"''.join(chr(i) for i in range(128)) * 3"},
    {"[''.join(chr(i) for i in range(n, 128)) for n in range(17)]"},
    {"'\\ud800'", Writes::kAsciiOnly},  // A lone surrogate: no UTF-8.
    {"'x\\udfff'", Writes::kAsciiOnly},
    {"0"},
    {"-1"},
    {"2**63 - 1"},
    {"-2**63"},
    {"2**63"},
    {"-(2**64) - 1"},
    {"10**40"},
    {"-(10**100)"},
    {"0.1"},
    {"1e16"},
    {"1e15"},
    {"1e-7"},
    {"-0.0"},
    {"1.0"},
    {"123456789.123456789"},
    {"5e-324"},
    {"1.7976931348623157e308"},
    {"float('nan')"},
    {"float('inf')"},
    {"float('-inf')"},
    {"True"},
    {"False"},
    {"None"},
    {"[True, 1, False, 0, None, 1.0]"},
    {"{'t': True, 'one': 1, 'f': False, 'zero': 0}"},
    {"{'a': {'b': [1, {'c': (None, 'd', [])}]}, 'e': [[[]]]}"},
    {"{1: 'int', -7: 'negative', 10**30: 'big', 2.5: 'float', True: 'true', False: 'false', "
     "None: 'none', float('nan'): 'nan', float('-inf'): 'ninf'}"},
    {"{'é': 1, '\\n': 2, '\"': 3}"},
    {"[i * 0.5 for i in range(50)]"},
    {"list(range(-5, 300, 7))"},
    // Subclasses (json encodes them as their base, but they may override anything), other types,
    // and what json refuses: all left to json.
    {"type('D', (dict,), {})(a=1)", Writes::kNeither},
    {"{'k': type('S', (str,), {})('x')}", Writes::kNeither},
    {"{'k': type('I', (int,), {})(5)}", Writes::kNeither},
    {"{'k': type('F', (float,), {})(1.5)}", Writes::kNeither},
    {"{'k': type('L', (list,), {})([1])}", Writes::kNeither},
    {"{type('S', (str,), {})('key'): 1}", Writes::kNeither},
    {"{(1, 2): 'tuple key'}", Writes::kNeither},
    {"{'when': datetime.datetime(2024, 1, 1)}", Writes::kNeither},
    {"{'set': {1, 2}}", Writes::kNeither},
    {"{'bytes': b'x'}", Writes::kNeither},
    {"__import__('functools').reduce(lambda a, _: [a], range(450), [])",  // Deeper than it goes.
     Writes::kNeither},
    {"(lambda l: (l.append(l), l)[1])([])", Writes::kNeither},  // Circular.
};

class PythonJsonWriterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(EnsureInterpreter().ok()); }
};

TEST_F(PythonJsonWriterTest, WritesTheBytesOfJsonDumpsOrDeclines) {
  GilLock gil;
  py::dict scope;
  scope["json"] = py::module_::import("json");
  scope["datetime"] = py::module_::import("datetime");
  py::object dumps = py::module_::import("json").attr("dumps");
  for (const Case& c : kCases) {
    py::object value = py::eval(c.python, scope);
    for (bool ensure_ascii : {false, true}) {
      SCOPED_TRACE(std::string(c.python) + (ensure_ascii ? " (ensure_ascii)" : ""));
      bool expected = c.writes == Writes::kBoth || (c.writes == Writes::kAsciiOnly && ensure_ascii);
      std::string out = "prefix:";
      bool written = JsonWriter(out, ensure_ascii).Write(value.ptr());
      EXPECT_FALSE(PyErr_Occurred());
      ASSERT_EQ(written, expected) << out;
      if (!written) continue;
      std::string reference =
          dumps(value, py::arg("ensure_ascii") = ensure_ascii).cast<std::string>();
      EXPECT_EQ(out, "prefix:" + reference);
      // With a key cache: the keys' text remembered by a first call, reused by a second.
      JsonKeyCache keys;
      for (int pass = 0; pass < 2; ++pass) {
        std::string cached;
        EXPECT_TRUE(JsonWriter(cached, ensure_ascii, &keys).Write(value.ptr()));
        EXPECT_EQ(cached, reference) << "pass " << pass;
      }
      keys.Clear();
    }
  }
}

// Keys repeated in every record come from the cache; a key that was not interned is not kept.
TEST_F(PythonJsonWriterTest, KeyCacheHoldsInternedKeysOnly) {
  GilLock gil;
  py::dict scope;
  py::object records =
      py::eval("[{'name': 'a', ''.join(['ru', 'ntime']): 1}, {'name': 'b', 'runtime': 2}]", scope);
  JsonKeyCache keys;
  std::string out;
  for (py::handle record : records) ASSERT_TRUE(JsonWriter(out, false, &keys).Write(record.ptr()));
  EXPECT_EQ(out, R"({"name": "a", "runtime": 1}{"name": "b", "runtime": 2})");
  py::object name = py::list(records[py::int_(0)].attr("keys")())[py::int_(0)];
  py::object built = py::list(records[py::int_(0)].attr("keys")())[py::int_(1)];
  py::object literal = py::list(records[py::int_(1)].attr("keys")())[py::int_(1)];
  // The cache is direct-mapped: the two interned keys may share a slot, the later one kept.
  const std::string* cached_literal = keys.Find(literal.ptr());
  ASSERT_NE(cached_literal, nullptr);
  EXPECT_EQ(*cached_literal, R"("runtime")");
  if (const std::string* cached_name = keys.Find(name.ptr())) {
    EXPECT_EQ(*cached_name, R"("name")");
  }
  EXPECT_EQ(keys.Find(built.ptr()), nullptr);
  keys.Clear();
  EXPECT_EQ(keys.Find(literal.ptr()), nullptr);
  EXPECT_EQ(keys.Find(name.ptr()), nullptr);

  // One interned key and one built one, alone in the cache: only the interned one is kept.
  JsonKeyCache single;
  out.clear();
  ASSERT_TRUE(JsonWriter(out, false, &single).Write(records[py::int_(0)].ptr()));
  ASSERT_NE(single.Find(name.ptr()), nullptr);
  EXPECT_EQ(*single.Find(name.ptr()), R"("name")");
  EXPECT_EQ(single.Find(built.ptr()), nullptr);
  single.Clear();
}

}  // namespace
}  // namespace bizon::python
