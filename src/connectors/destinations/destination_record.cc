#include "connectors/destinations/destination_record.h"

#include <fmt/format.h>
#include <unistd.h>

#include <bit>
#include <climits>
#include <cstring>

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
      std::memcpy(p, "u00", 3);
      p += 3;
      *p++ = kHex[c >> 4];
      *p++ = kHex[c & 0xf];
  }
  return p;
}

bool NeedsEscape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

/// Writes `text` as a JSON string at `p` (room for 2 + 6 * size bytes) and returns the end.
char* PutJsonString(char* p, std::string_view text) {
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
      std::memcpy(p, "+00:00", 6);
      return p + 6;
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
  std::memcpy(p, "+00:00", 6);
  return p + 6;
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

}  // namespace bizon
