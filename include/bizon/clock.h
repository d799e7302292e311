// Wall-clock helpers shared by the engine and connectors. All times are UTC microseconds since
// the Unix epoch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "bizon/status.h"

namespace bizon {

int64_t NowMicros();

/// A UTC instant broken into calendar fields.
struct UtcTime {
  int year = 1970, month = 1, day = 1, hour = 0, minute = 0, second = 0;
  int64_t microsecond = 0;
};
UtcTime SplitUtc(int64_t micros);

/// "2026-10-08T09:46:55.094362Z".
std::string FormatIsoTimestamp(int64_t micros);
/// "2026-10-08 09:46:55.094362": the form written into backend rows and NDJSON records.
std::string FormatSqlTimestamp(int64_t micros);
/// Parses either form above, with optional fraction, optional 'Z' or "+00:00" suffix.
Result<int64_t> ParseTimestamp(std::string_view text);

/// A random uuid4 as 32 lowercase hex characters.
std::string NewUuidHex();

}  // namespace bizon
