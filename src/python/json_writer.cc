#include "python/json_writer.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>

namespace bizon::python {
namespace {

constexpr int kMaxDepth = 400;

// Whether json writes the ASCII character `c` as is.
bool Plain(unsigned char c, bool ensure_ascii) {
  return c >= ' ' && c != '\\' && c != '"' && (!ensure_ascii || c <= '~');
}

// Whether any of the 8 ASCII characters packed in `word` needs escaping (the bit tricks of "Bit
// Twiddling Hacks": a byte below n, a byte equal to c; exact for bytes below 0x80).
bool AnyEscaped(uint64_t word, bool ensure_ascii) {
  constexpr uint64_t kOnes = 0x0101010101010101;
  constexpr uint64_t kHigh = 0x8080808080808080;
  auto zero_byte = [&](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  uint64_t found = ((word - kOnes * ' ') & ~word & kHigh) | zero_byte(word ^ (kOnes * '"')) |
                   zero_byte(word ^ (kOnes * '\\'));
  if (ensure_ascii) found |= zero_byte(word ^ (kOnes * 0x7f));
  return found != 0;
}

#if defined(__SSE2__)
// A bit per character of the 16 at `text` (ASCII) that needs escaping.
unsigned EscapedMask(const char* text, bool ensure_ascii) {
  __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text));
  __m128i found = _mm_or_si128(_mm_cmplt_epi8(chunk, _mm_set1_epi8(' ')),
                               _mm_or_si128(_mm_cmpeq_epi8(chunk, _mm_set1_epi8('"')),
                                            _mm_cmpeq_epi8(chunk, _mm_set1_epi8('\\'))));
  if (ensure_ascii) found = _mm_or_si128(found, _mm_cmpeq_epi8(chunk, _mm_set1_epi8(0x7f)));
  return static_cast<unsigned>(_mm_movemask_epi8(found));
}
#endif

// From `i`, past the ASCII characters of text[..length) that are written as they are, many at a
// time; stops at one to escape, or somewhere in the last few characters.
Py_ssize_t SkipPlain(const char* text, Py_ssize_t i, Py_ssize_t length, bool ensure_ascii) {
#if defined(__SSE2__)
  for (; i + 16 <= length; i += 16) {
    unsigned mask = EscapedMask(text + i, ensure_ascii);
    if (mask != 0) return i + std::countr_zero(mask);
  }
#endif
  for (; i + 8 <= length; i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, text + i, sizeof(word));
    if (AnyEscaped(word, ensure_ascii)) return i;
  }
  return i;
}

}  // namespace

bool JsonWriter::Write(PyObject* value) {
  end_ = out_.size();
  bool written = WriteValue(value, 0);
  out_.resize(end_);  // Drops the room grown beyond the text.
  return written;
}

void JsonWriter::Grow(size_t size) {
  // Up to the capacity, else twice that: amortised, and nothing is zero-filled.
  size_t wanted = std::max(end_ + size, out_.capacity());
  if (wanted > out_.capacity()) wanted = std::max(wanted, 2 * out_.capacity());
  out_.resize_and_overwrite(wanted, [](char*, size_t length) { return length; });
}

void JsonWriter::Put(const char* text, size_t size) {
  std::memcpy(Room(size), text, size);
  end_ += size;
}

bool JsonWriter::WriteValue(PyObject* value, int depth) {
  if (depth > kMaxDepth) return false;  // Possibly circular: json reports it exactly.
  if (value == Py_None) {
    Put("null");
  } else if (value == Py_True) {
    Put("true");
  } else if (value == Py_False) {
    Put("false");
  } else if (PyUnicode_CheckExact(value)) {
    return WriteString(value);
  } else if (PyLong_CheckExact(value)) {
    return WriteInteger(value);
  } else if (PyFloat_CheckExact(value)) {
    return WriteFloat(PyFloat_AS_DOUBLE(value));
  } else if (PyList_CheckExact(value) || PyTuple_CheckExact(value)) {
    Py_ssize_t size = PySequence_Fast_GET_SIZE(value);
    PyObject** items = PySequence_Fast_ITEMS(value);
    Put('[');
    for (Py_ssize_t i = 0; i < size; ++i) {
      if (i > 0) Put(", ");
      if (!WriteValue(items[i], depth + 1)) return false;
    }
    Put(']');
  } else if (PyDict_CheckExact(value)) {
    Put('{');
    Py_ssize_t position = 0;
    PyObject* key = nullptr;
    PyObject* item = nullptr;
    bool first = true;
    while (PyDict_Next(value, &position, &key, &item)) {
      if (!first) Put(", ");
      first = false;
      if (!WriteKey(key)) return false;
      Put(": ");
      if (!WriteValue(item, depth + 1)) return false;
    }
    Put('}');
  } else {
    return false;
  }
  return true;
}

void JsonKeyCache::Remember(PyObject* key, std::string_view text) {
  Entry& entry = entries_[Slot(key)];
  Py_XSETREF(entry.key, Py_NewRef(key));
  entry.text.assign(text);
}

void JsonKeyCache::Clear() {
  for (Entry& entry : entries_) Py_CLEAR(entry.key);
}

bool JsonWriter::WriteKey(PyObject* key) {
  if (PyUnicode_CheckExact(key)) {
    if (keys_ == nullptr) return WriteString(key);
    if (const std::string* text = keys_->Find(key)) {
      Put(text->data(), text->size());
      return true;
    }
    size_t begin = end_;
    if (!WriteString(key)) return false;
    // Interned keys repeat (literals, attribute names); others (ids as keys, say) may not.
    if (PyUnicode_CHECK_INTERNED(key) != 0) {
      keys_->Remember(key, std::string_view(out_.data() + begin, end_ - begin));
    }
    return true;
  }
  Put('"');
  if (PyFloat_CheckExact(key)) {
    if (!WriteFloat(PyFloat_AS_DOUBLE(key))) return false;
  } else if (key == Py_True) {
    Put("true");
  } else if (key == Py_False) {
    Put("false");
  } else if (key == Py_None) {
    Put("null");
  } else if (PyLong_CheckExact(key)) {
    if (!WriteInteger(key)) return false;
  } else {
    return false;
  }
  Put('"');
  return true;
}

bool JsonWriter::WriteInteger(PyObject* value) {
  int overflow = 0;
  long long integer = PyLong_AsLongLongAndOverflow(value, &overflow);  // NOLINT(google-runtime-int)
  if (overflow == 0) {
    if (integer == -1 && PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      return false;
    }
    char* digits = Room(24);
    end_ += static_cast<size_t>(std::to_chars(digits, digits + 24, integer).ptr - digits);
    return true;
  }
  // Beyond 64 bits: int.__repr__, as json writes it.
  Ref text(PyObject_Repr(value));
  Py_ssize_t size = 0;
  const char* digits = text ? PyUnicode_AsUTF8AndSize(text.get(), &size) : nullptr;
  if (digits == nullptr) {
    PyErr_Clear();
    return false;
  }
  Put(digits, static_cast<size_t>(size));
  return true;
}

bool JsonWriter::WriteFloat(double value) {
  if (std::isnan(value)) {
    Put("NaN");
  } else if (std::isinf(value)) {
    if (value > 0) {
      Put("Infinity");
    } else {
      Put("-Infinity");
    }
  } else {
    char* text = PyOS_double_to_string(value, 'r', 0, Py_DTSF_ADD_DOT_0, nullptr);
    if (text == nullptr) {
      PyErr_Clear();
      return false;
    }
    Put(text, std::strlen(text));
    PyMem_Free(text);
  }
  return true;
}

void JsonWriter::Escape(uint32_t c) {
  static constexpr char kHex[] = "0123456789abcdef";
  auto unit = [&](uint32_t u) {
    char escaped[6] = {
        '\\',         'u', kHex[(u >> 12) & 0xf], kHex[(u >> 8) & 0xf], kHex[(u >> 4) & 0xf],
        kHex[u & 0xf]};
    Put(escaped, sizeof(escaped));
  };
  switch (c) {
    case '"':
      Put("\\\"");
      return;
    case '\\':
      Put("\\\\");
      return;
    case '\b':
      Put("\\b");
      return;
    case '\f':
      Put("\\f");
      return;
    case '\n':
      Put("\\n");
      return;
    case '\r':
      Put("\\r");
      return;
    case '\t':
      Put("\\t");
      return;
    default:
      break;
  }
  if (c >= 0x10000) {
    uint32_t v = c - 0x10000;
    unit(0xd800 | ((v >> 10) & 0x3ff));
    unit(0xdc00 | (v & 0x3ff));
  } else {
    unit(c);
  }
}

void JsonWriter::PutUtf8(uint32_t c) {
  char bytes[4];
  size_t size = 0;
  if (c < 0x800) {
    bytes[0] = static_cast<char>(0xc0 | (c >> 6));
    bytes[1] = static_cast<char>(0x80 | (c & 0x3f));
    size = 2;
  } else if (c < 0x10000) {
    bytes[0] = static_cast<char>(0xe0 | (c >> 12));
    bytes[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    bytes[2] = static_cast<char>(0x80 | (c & 0x3f));
    size = 3;
  } else {
    bytes[0] = static_cast<char>(0xf0 | (c >> 18));
    bytes[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    bytes[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    bytes[3] = static_cast<char>(0x80 | (c & 0x3f));
    size = 4;
  }
  Put(bytes, size);
}

bool JsonWriter::WriteString(PyObject* text) {
  Put('"');
  Py_ssize_t length = PyUnicode_GET_LENGTH(text);
  if (PyUnicode_IS_ASCII(text)) {
    const char* ascii = static_cast<const char*>(PyUnicode_DATA(text));
    Py_ssize_t start = 0;
    Py_ssize_t i = 0;
    while (true) {
      i = SkipPlain(ascii, i, length, ensure_ascii_);
      if (i >= length) break;
      auto c = static_cast<unsigned char>(ascii[i]);
      if (!Plain(c, ensure_ascii_)) {
        Put(ascii + start, static_cast<size_t>(i - start));
        Escape(c);
        start = i + 1;
      }
      ++i;
    }
    Put(ascii + start, static_cast<size_t>(length - start));
  } else {
    int kind = PyUnicode_KIND(text);
    const void* data = PyUnicode_DATA(text);
    for (Py_ssize_t i = 0; i < length; ++i) {
      Py_UCS4 c = PyUnicode_READ(kind, data, i);
      if (c < 0x80) {
        if (Plain(static_cast<unsigned char>(c), ensure_ascii_)) {
          Put(static_cast<char>(c));
        } else {
          Escape(c);
        }
      } else if (ensure_ascii_) {
        Escape(c);
      } else if (c >= 0xd800 && c <= 0xdfff) {
        return false;  // A lone surrogate has no UTF-8: json's str holds it, the caller fails.
      } else {
        PutUtf8(c);
      }
    }
  }
  Put('"');
  return true;
}

}  // namespace bizon::python
