#include "connectors/destinations/destination_record.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "bizon/clock.h"
#include "bizon/value.h"

namespace bizon {

namespace {

/// Writes `value` as exactly `width` decimal digits at `out`.
void PutDigits(char* out, int64_t value, int width) {
  for (int i = width - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
}

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;

/// A mask whose lowest set high bit marks the first of the eight bytes (little-endian order)
/// that JSON must escape: '"', '\\' or below U+0020. Zero when none must. Higher bits may be
/// false positives (a borrow), so only the lowest one is used.
uint64_t EscapeMask(uint64_t x) {
  uint64_t control = (x - kOnes * 0x20) & ~x & kHighs;
  uint64_t quote = x ^ (kOnes * '"');
  uint64_t backslash = x ^ (kOnes * '\\');
  return control | ((quote - kOnes) & ~quote & kHighs) |
         ((backslash - kOnes) & ~backslash & kHighs);
}

/// Writes the escape of one byte that needs one.
char* PutEscaped(char* p, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  *p++ = '\\';
  switch (c) {
    case '"':
      *p++ = '"';
      break;
    case '\\':
      *p++ = '\\';
      break;
    case '\n':
      *p++ = 'n';
      break;
    case '\r':
      *p++ = 'r';
      break;
    case '\t':
      *p++ = 't';
      break;
    case '\b':
      *p++ = 'b';
      break;
    case '\f':
      *p++ = 'f';
      break;
    default:
      p = std::copy_n("u00", 3, p);
      *p++ = kHex[c >> 4];
      *p++ = kHex[c & 0xf];
  }
  return p;
}

bool NeedsEscape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

/// Writes `text` as a JSON string at `p` (room for 2 + 6 * size bytes) and returns the end.
/// Eight bytes at a time, with a branch per escape.
char* PutJsonStringSwar(char* p, std::string_view text) {
  const char* s = text.data();
  size_t n = text.size();
  size_t i = 0;
  *p++ = '"';
  if constexpr (std::endian::native == std::endian::little) {
    while (i + 8 <= n) {
      uint64_t x;
      std::memcpy(&x, s + i, 8);
      uint64_t mask = EscapeMask(x);
      if (mask == 0) {
        std::memcpy(p, &x, 8);
        p += 8;
        i += 8;
        continue;
      }
      // The whole word is stored (the room is there) and only its clean prefix kept: a fixed
      // 8-byte store, not a call for a few bytes.
      size_t clean = static_cast<size_t>(std::countr_zero(mask)) / 8;
      std::memcpy(p, &x, 8);
      p += clean;
      i += clean;
      auto c = static_cast<unsigned char>(s[i++]);
      if (c == '"' || c == '\\') {  // Most escapes in JSON text: one backslash before it.
        p[0] = '\\';
        p[1] = static_cast<char>(c);
        p += 2;
      } else {
        p = PutEscaped(p, c);
      }
    }
  }
  for (; i < n; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (NeedsEscape(c)) {
      p = PutEscaped(p, c);
    } else {
      *p++ = static_cast<char>(c);
    }
  }
  *p++ = '"';
  return p;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define BIZON_HAVE_VBMI2_ESCAPE 1

/// PutJsonStringSwar without a branch per escape, 32 bytes at a time with AVX-512 VBMI2: each
/// byte is paired with a backslash (bytes 2i and 2i+1 of a 64-byte vector), and one compress
/// keeps the backslashes of the bytes that need one. A block holding a control character (rare
/// in JSON text: it needs a \u escape) takes the byte-wise path. A source_data of JSON has a
/// quote every dozen bytes, each a mispredicted branch in the SWAR loop.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,bmi2,popcnt"))) char*
PutJsonStringVbmi2(char* p, std::string_view text) {
  const char* s = text.data();
  size_t n = text.size();
  *p++ = '"';
  const __m512i quote = _mm512_set1_epi8('"');
  const __m512i backslash = _mm512_set1_epi8('\\');
  const __m512i space = _mm512_set1_epi8(0x20);
  alignas(64) static constexpr uint8_t kPairs[64] = {
      0,  0,  1,  1,  2,  2,  3,  3,  4,  4,  5,  5,  6,  6,  7,  7,  8,  8,  9,  9,  10, 10,
      11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 21, 21,
      22, 22, 23, 23, 24, 24, 25, 25, 26, 26, 27, 27, 28, 28, 29, 29, 30, 30, 31, 31};
  const __m512i pairs = _mm512_load_si512(kPairs);
  constexpr uint64_t kEven = 0x5555555555555555ULL;
  constexpr uint64_t kOdd = 0xAAAAAAAAAAAAAAAAULL;
  for (size_t i = 0; i < n; i += 32) {
    size_t count = n - i < 32 ? n - i : 32;
    __mmask64 live = (1ULL << count) - 1;
    // Masked: never reads past the text; lanes 32 to 63 stay zero.
    __m512i x = _mm512_maskz_loadu_epi8(live, s + i);
    __mmask64 control = _mm512_mask_cmplt_epu8_mask(live, x, space);
    if (control != 0) {
      for (size_t k = 0; k < count; ++k) {
        auto c = static_cast<unsigned char>(s[i + k]);
        if (NeedsEscape(c)) {
          p = PutEscaped(p, c);
        } else {
          *p++ = static_cast<char>(c);
        }
      }
      continue;
    }
    __mmask64 escaped = _mm512_mask_cmpeq_epi8_mask(live, x, quote) |
                        _mm512_mask_cmpeq_epi8_mask(live, x, backslash);
    // Byte 2k + 1 is text byte k, byte 2k a backslash kept only where byte k needs one.
    __m512i paired = _mm512_mask_permutexvar_epi8(backslash, kOdd, pairs, x);
    uint64_t kept =
        (_pdep_u64(escaped, kEven) | kOdd) & (count == 32 ? ~0ULL : (1ULL << (2 * count)) - 1);
    size_t length = count + static_cast<size_t>(_mm_popcnt_u64(escaped));
    __m512i out = _mm512_maskz_compress_epi8(kept, paired);
    _mm512_mask_storeu_epi8(p, length == 64 ? ~0ULL : (1ULL << length) - 1, out);
    p += length;
  }
  *p++ = '"';
  return p;
}

bool CpuHasVbmi2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") &&
         __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("bmi2") &&
         __builtin_cpu_supports("popcnt");
}

const bool kVbmi2 = CpuHasVbmi2();
#else
const bool kVbmi2 = false;
#endif

/// PutJsonStringVbmi2 when `vbmi2` (which the CPU must have), else PutJsonStringSwar.
char* PutJsonStringOn(bool vbmi2, char* p, std::string_view text) {
#ifdef BIZON_HAVE_VBMI2_ESCAPE
  if (vbmi2) return PutJsonStringVbmi2(p, text);
#endif
  (void)vbmi2;
  return PutJsonStringSwar(p, text);
}

/// The fastest escape this CPU runs, chosen once.
char* PutJsonString(char* p, std::string_view text) { return PutJsonStringOn(kVbmi2, p, text); }

/// Longest text PutRfc3339 writes: "-292277-01-01T00:00:00.000000+00:00" and margin.
constexpr size_t kMaxRfc3339 = 48;

char* PutRfc3339(char* p, int64_t micros, SecondCache& cache) {
  int64_t& cached_second = cache.second;
  char* cached_text = cache.text;
  int64_t second = micros / 1'000'000;
  int64_t fraction = micros % 1'000'000;
  if (fraction < 0) {
    fraction += 1'000'000;
    second -= 1;
  }
  if (second != cached_second) {
    UtcTime t = SplitUtc(second * 1'000'000);
    if (t.year < 0 || t.year > 9999) {  // Outside what four digits hold: the general path.
      p = fmt::format_to(p, "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", t.year, t.month, t.day, t.hour,
                         t.minute, t.second);
      if (fraction != 0) p = fmt::format_to(p, ".{:06}", fraction);
      return std::copy_n("+00:00", 6, p);
    }
    PutDigits(cached_text, t.year, 4);
    cached_text[4] = '-';
    PutDigits(cached_text + 5, t.month, 2);
    cached_text[7] = '-';
    PutDigits(cached_text + 8, t.day, 2);
    cached_text[10] = 'T';
    PutDigits(cached_text + 11, t.hour, 2);
    cached_text[13] = ':';
    PutDigits(cached_text + 14, t.minute, 2);
    cached_text[16] = ':';
    PutDigits(cached_text + 17, t.second, 2);
    cached_second = second;
  }
  std::memcpy(p, cached_text, sizeof(cache.text));
  p += sizeof(cache.text);
  if (fraction != 0) {
    *p = '.';
    PutDigits(p + 1, fraction, 6);
    p += 7;
  }
  return std::copy_n("+00:00", 6, p);
}

char* PutText(char* p, std::string_view text) {
  std::memcpy(p, text.data(), text.size());
  return p + text.size();
}

char* PutUuidHex(char* p, std::mt19937_64& random) {
  uint64_t high = (random() & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // Version 4.
  uint64_t low = (random() & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;   // RFC 4122.
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 15; i >= 0; --i, high >>= 4) p[i] = kHex[high & 0xf];
  for (int i = 31; i >= 16; --i, low >>= 4) p[i] = kHex[low & 0xf];
  return p + 32;
}

/// Appends what `put(p)` writes at p, in place: `put` writes at most `bound` bytes and returns
/// the end. The string grows without zero-filling the room first.
template <typename Put>
void AppendBounded(std::string& out, size_t bound, Put put) {
  size_t start = out.size();
  out.resize_and_overwrite(start + bound, [&](char* data, size_t) {
    return static_cast<size_t>(put(data + start) - data);
  });
}

}  // namespace

void AppendRfc3339(std::string& out, int64_t micros) {
  thread_local SecondCache cache;
  AppendBounded(out, kMaxRfc3339, [&](char* p) { return PutRfc3339(p, micros, cache); });
}

std::string_view JsonStringEscaper() { return kVbmi2 ? "avx512-vbmi2" : "swar"; }

std::vector<std::string_view> JsonStringEscapers() {
  std::vector<std::string_view> escapers = {"swar"};
  if (kVbmi2) escapers.push_back("avx512-vbmi2");
  return escapers;
}

void AppendJsonStringWith(std::string& out, std::string_view text, std::string_view escaper) {
  bool vbmi2 = escaper == "avx512-vbmi2" && kVbmi2;
  AppendBounded(out, 2 + 6 * text.size(), [&](char* p) { return PutJsonStringOn(vbmi2, p, text); });
}

void AppendJsonStringFast(std::string& out, std::string_view text) {
  AppendBounded(out, 2 + 6 * text.size(), [&](char* p) { return PutJsonString(p, text); });
}

DestinationRecordWriter::DestinationRecordWriter()
    : random_(std::random_device{}()), seeded_for_(::getpid()) {}

void DestinationRecordWriter::StartBatch() {
  if (seeded_for_ != ::getpid()) {
    random_.seed(std::random_device{}());
    seeded_for_ = ::getpid();
  }
}

void DestinationRecordWriter::Append(std::string& out, const RecordBatch& batch, size_t i,
                                     int64_t loaded_at_us) {
  std::string_view id = batch.id(i);
  std::string_view payload = batch.payload(i);
  static constexpr std::string_view kStart = R"({"bizon_id":")";
  static constexpr std::string_view kExtracted = R"(","bizon_extracted_at":")";
  static constexpr std::string_view kLoaded = R"(","bizon_loaded_at":")";
  static constexpr std::string_view kRecordId = R"(","source_record_id":)";
  static constexpr std::string_view kTimestamp = R"(,"source_timestamp":")";
  static constexpr std::string_view kData = R"(","source_data":)";
  size_t bound = kStart.size() + 32 + kExtracted.size() + kLoaded.size() + kRecordId.size() +
                 kTimestamp.size() + kData.size() + 3 * kMaxRfc3339 + 2 + 6 * id.size() + 2 +
                 6 * payload.size() + 1;
  AppendBounded(out, bound, [&](char* p) {
    p = PutText(p, kStart);
    p = PutUuidHex(p, random_);
    p = PutText(p, kExtracted);
    p = PutRfc3339(p, batch.extracted_at_us(i), extracted_at_);
    p = PutText(p, kLoaded);
    p = PutRfc3339(p, loaded_at_us, loaded_at_);
    p = PutText(p, kRecordId);
    p = PutJsonString(p, id);
    p = PutText(p, kTimestamp);
    p = PutRfc3339(p, batch.timestamp_us(i), source_timestamp_);
    p = PutText(p, kData);
    p = PutJsonString(p, payload);
    *p++ = '}';
    return p;
  });
}

void AppendDestinationRecord(std::string& out, const RecordBatch& batch, size_t i,
                             int64_t loaded_at_us) {
  thread_local DestinationRecordWriter writer;
  writer.StartBatch();
  writer.Append(out, batch, i, loaded_at_us);
}

std::string QuoteDestinationId(std::string_view id) {
  std::string out = "'";
  for (char c : id) {
    auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (byte < 0x20 || byte == 0x7f) {
          out += fmt::format("\\x{:02x}", byte);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('\'');
  return out;
}

std::string StagingTableName(std::string_view table, SyncMode sync_mode) {
  switch (sync_mode) {
    case SyncMode::kFullRefresh:
      return std::string(table) + "_temp";
    case SyncMode::kIncremental:
      return std::string(table) + "_incremental";
    case SyncMode::kStream:
      break;
  }
  return std::string(table);
}

Status CheckDestinationIdCharacters(std::string_view id) {
  if (id.empty()) {
    return Status(StatusCode::kInvalidArgument, "a destination id must not be empty",
                  FailureClass::kDestination);
  }
  for (char c : id) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("a destination id must not contain NUL or other control "
                                "characters: {}",
                                QuoteDestinationId(id)),
                    FailureClass::kDestination);
    }
  }
  return Status::Ok();
}

std::map<std::string, std::vector<size_t>, std::less<>> RowsByDestination(
    const RecordBatch& batch) {
  std::map<std::string, std::vector<size_t>, std::less<>> groups;
  for (size_t i = 0; i < batch.size(); ++i) {
    groups[std::string(batch.destination_id(i))].push_back(i);
  }
  return groups;
}

}  // namespace bizon
