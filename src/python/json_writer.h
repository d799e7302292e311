// JsonWriter: json.dumps(value) written straight into a std::string, byte for byte what Python's
// C encoder writes, for the common types. Internal to src/python/ (GIL held).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "python/interpreter.h"

namespace bizon::python {

/// json.dumps(value) or json.dumps(value, ensure_ascii=False) with the other defaults (", " and
/// ": " separators, NaN/Infinity allowed, keys unsorted), appended to `out` for exact dict, list,
/// tuple, str, int, float, bool and None, with the C encoder's rules: float repr, integers of any
/// size, keys from str/float/bool/None/int. With `ensure_ascii` every character outside
/// ' '..'~' is a \uXXXX escape (lowercase hex, surrogate pairs); without it only '"', '\\' and
/// the control characters below 0x20 are escaped and the rest is written as UTF-8.
///
/// Write() returns false, leaving `out` in any state, for anything else: subclasses, other types,
/// a lone surrogate without `ensure_ascii` (not UTF-8), nesting deeper than 400 (possibly
/// circular). The caller then asks json itself, which writes the same bytes or raises the exact
/// error.
/// The JSON text of dict keys that repeat from record to record, for one JsonWriter mode: interned
/// str keys (dict literals, attribute names), each held by a reference, so that a key found by
/// its address is the same text. Clear() it under the GIL before it is destroyed.
class JsonKeyCache {
 public:
  JsonKeyCache() = default;
  JsonKeyCache(const JsonKeyCache&) = delete;
  JsonKeyCache& operator=(const JsonKeyCache&) = delete;

  /// The text of `key` (quoted, escaped), or null.
  const std::string* Find(PyObject* key) const {
    const Entry& entry = entries_[Slot(key)];
    return entry.key == key ? &entry.text : nullptr;
  }
  void Remember(PyObject* key, std::string_view text);
  void Clear();

 private:
  struct Entry {
    PyObject* key = nullptr;  // Owned.
    std::string text;
  };
  static size_t Slot(PyObject* key) { return (reinterpret_cast<uintptr_t>(key) >> 4) % kEntries; }

  static constexpr size_t kEntries = 64;
  std::array<Entry, kEntries> entries_;
};

class JsonWriter {
 public:
  /// `keys`, when given, remembers the text of repeated keys across calls (one mode per cache).
  JsonWriter(std::string& out, bool ensure_ascii, JsonKeyCache* keys = nullptr)
      : out_(out), ensure_ascii_(ensure_ascii), keys_(keys) {}

  bool Write(PyObject* value);

 private:
  bool WriteValue(PyObject* value, int depth);
  bool WriteKey(PyObject* key);
  bool WriteInteger(PyObject* value);
  bool WriteFloat(double value);
  bool WriteString(PyObject* text);
  void Escape(uint32_t c);
  void PutUtf8(uint32_t c);

  // Room for `size` more bytes at end_, out_ grown as needed without filling it (out_ is cut
  // back to end_ when Write returns): a compare and a store per byte, not a std::string append.
  char* Room(size_t size) {
    if (size > out_.size() - end_) Grow(size);
    return out_.data() + end_;
  }
  void Grow(size_t size);
  void Put(char c) {
    *Room(1) = c;
    ++end_;
  }
  void Put(const char* text, size_t size);
  template <size_t N>
  void Put(const char (&literal)[N]) {
    Put(literal, N - 1);
  }

  std::string& out_;
  size_t end_ = 0;  // Where the text written so far ends in out_.
  bool ensure_ascii_;
  JsonKeyCache* keys_;
};

}  // namespace bizon::python
