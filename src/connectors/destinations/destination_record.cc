#include "connectors/destinations/destination_record.h"

#include <fmt/format.h>

#include <climits>

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

}  // namespace

void AppendRfc3339(std::string& out, int64_t micros) {
  // Three timestamps per record, and the records of a batch mostly share their second: the
  // calendar split and the formatting of "YYYY-MM-DDTHH:MM:SS" are kept for the last second seen.
  thread_local int64_t cached_second = INT64_MIN;
  thread_local char cached_text[19];
  int64_t second = micros / 1'000'000;
  int64_t fraction = micros % 1'000'000;
  if (fraction < 0) {
    fraction += 1'000'000;
    second -= 1;
  }
  if (second != cached_second) {
    UtcTime t = SplitUtc(second * 1'000'000);
    if (t.year < 0 || t.year > 9999) {  // Outside what four digits hold: the general path.
      fmt::format_to(std::back_inserter(out), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", t.year,
                     t.month, t.day, t.hour, t.minute, t.second);
      if (fraction != 0) fmt::format_to(std::back_inserter(out), ".{:06}", fraction);
      out.append("+00:00");
      return;
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
  out.append(cached_text, sizeof(cached_text));
  if (fraction != 0) {
    char digits[7] = {'.'};
    PutDigits(digits + 1, fraction, 6);
    out.append(digits, sizeof(digits));
  }
  out.append("+00:00");
}

void AppendDestinationRecord(std::string& out, const RecordBatch& batch, size_t i,
                             int64_t loaded_at_us) {
  out.append(R"({"bizon_id":")");
  out.append(NewUuidHex());
  out.append(R"(","bizon_extracted_at":")");
  AppendRfc3339(out, batch.extracted_at_us(i));
  out.append(R"(","bizon_loaded_at":")");
  AppendRfc3339(out, loaded_at_us);
  out.append(R"(","source_record_id":)");
  AppendJsonString(out, batch.id(i));
  out.append(R"(,"source_timestamp":")");
  AppendRfc3339(out, batch.timestamp_us(i));
  out.append(R"(","source_data":)");
  AppendJsonString(out, batch.payload(i));
  out.push_back('}');
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
