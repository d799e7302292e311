#include "bizon/clock.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>

namespace bizon {

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

UtcTime SplitUtc(int64_t micros) {
  int64_t seconds = micros / 1'000'000;
  int64_t fraction = micros % 1'000'000;
  if (fraction < 0) {
    fraction += 1'000'000;
    seconds -= 1;
  }
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return {tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, fraction};
}

namespace {

std::string FormatWith(int64_t micros, char separator, std::string_view suffix) {
  UtcTime t = SplitUtc(micros);
  return fmt::format("{:04}-{:02}-{:02}{}{:02}:{:02}:{:02}.{:06}{}", t.year, t.month, t.day,
                     separator, t.hour, t.minute, t.second, t.microsecond, suffix);
}

}  // namespace

std::string FormatIsoTimestamp(int64_t micros) { return FormatWith(micros, 'T', "Z"); }
std::string FormatSqlTimestamp(int64_t micros) { return FormatWith(micros, ' ', ""); }

Result<int64_t> ParseTimestamp(std::string_view text) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  std::string copy(text);
  int consumed = 0;
  // Each field has a width of at most four digits, so none can overflow an int.
  // NOLINTNEXTLINE(bugprone-unchecked-string-to-number-conversion)
  if (std::sscanf(copy.c_str(), "%4d-%2d-%2d%*1[T ]%2d:%2d:%2d%n", &year, &month, &day, &hour,
                  &minute, &second, &consumed) < 6) {
    return Fail(
        InvalidArgumentError("expected a timestamp like 2026-01-31T12:00:00Z, got '" + copy + "'"));
  }
  int64_t fraction = 0;
  size_t pos = static_cast<size_t>(consumed);
  if (pos < copy.size() && copy[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < copy.size() && copy[pos] >= '0' && copy[pos] <= '9') {
      if (digits < 6) fraction = fraction * 10 + (copy[pos] - '0');
      ++digits;
      ++pos;
    }
    for (; digits < 6; ++digits) fraction *= 10;
  }
  std::string_view rest = std::string_view(copy).substr(pos);
  if (!(rest.empty() || rest == "Z" || rest == "+00:00")) {
    return Fail(InvalidArgumentError("only UTC timestamps are supported, got '" + copy + "'"));
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<int64_t>(timegm(&tm)) * 1'000'000 + fraction;
}

std::string NewUuidHex() {
  // Reseeded in a forked child, which would otherwise repeat its parent's ids.
  thread_local std::mt19937_64 generator{std::random_device{}()};
  thread_local pid_t seeded_for = getpid();
  if (seeded_for != getpid()) {
    generator.seed(std::random_device{}());
    seeded_for = getpid();
  }
  uint64_t high = generator();
  uint64_t low = generator();
  high = (high & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // Version 4.
  low = (low & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;    // RFC 4122 variant.
  // A table rather than fmt: one id per record written.
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text(32, '0');
  for (int i = 15; i >= 0; --i, high >>= 4) text[static_cast<size_t>(i)] = kHex[high & 0xf];
  for (int i = 31; i >= 16; --i, low >>= 4) text[static_cast<size_t>(i)] = kHex[low & 0xf];
  return text;
}

}  // namespace bizon
