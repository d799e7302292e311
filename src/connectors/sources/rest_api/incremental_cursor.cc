#include "connectors/sources/rest_api/incremental_cursor.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>

#include "bizon/clock.h"

namespace bizon {
namespace {

// An ISO 8601 timestamp or date, and how it was written (to write a moved one the same way).
struct Instant {
  int64_t micros = 0;
  bool date_only = false;
  char separator = 'T';
  int fraction_digits = 0;
  std::string zone;  // "", "Z" or "+00:00" (any other offset is written back as +00:00).
};

bool ReadNumber(std::string_view text, size_t& pos, size_t digits, int& out) {
  if (pos + digits > text.size()) return false;
  auto [end, error] = std::from_chars(text.data() + pos, text.data() + pos + digits, out);
  if (error != std::errc() || end != text.data() + pos + digits) return false;
  pos += digits;
  return true;
}

bool Expect(std::string_view text, size_t& pos, char c) {
  if (pos >= text.size() || text[pos] != c) return false;
  ++pos;
  return true;
}

// Reads "[.fraction][Z|±HH:MM]" after the seconds; adds the fraction and subtracts the offset.
bool ReadFractionAndZone(std::string_view text, size_t pos, Instant& instant) {
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int64_t fraction = 0;
    int digits = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])) != 0) {
      if (digits < 6) fraction = fraction * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return false;
    instant.fraction_digits = digits;
    for (int i = digits; i < 6; ++i) fraction *= 10;
    instant.micros += fraction;
  }
  std::string_view zone = text.substr(pos);
  if (zone.empty() || zone == "Z") {
    instant.zone = std::string(zone);
    return true;
  }
  size_t at = 1;
  int hours = 0;
  int minutes = 0;
  if ((zone[0] != '+' && zone[0] != '-') || !ReadNumber(zone, at, 2, hours) ||
      !Expect(zone, at, ':') || !ReadNumber(zone, at, 2, minutes) || at != zone.size()) {
    return false;
  }
  int64_t offset = (int64_t{hours} * 60 + minutes) * 60 * 1'000'000;
  instant.micros += zone[0] == '+' ? -offset : offset;
  instant.zone = "+00:00";
  return true;
}

std::optional<Instant> ParseInstant(std::string_view text) {
  Instant instant;
  std::tm parts{};
  size_t pos = 0;
  if (!ReadNumber(text, pos, 4, parts.tm_year) || !Expect(text, pos, '-') ||
      !ReadNumber(text, pos, 2, parts.tm_mon) || !Expect(text, pos, '-') ||
      !ReadNumber(text, pos, 2, parts.tm_mday)) {
    return std::nullopt;
  }
  parts.tm_year -= 1900;
  parts.tm_mon -= 1;
  if (pos == text.size()) {
    instant.date_only = true;
    instant.micros = static_cast<int64_t>(timegm(&parts)) * 1'000'000;
    return instant;
  }
  if (text[pos] != 'T' && text[pos] != ' ') return std::nullopt;
  instant.separator = text[pos++];
  if (!ReadNumber(text, pos, 2, parts.tm_hour) || !Expect(text, pos, ':') ||
      !ReadNumber(text, pos, 2, parts.tm_min) || !Expect(text, pos, ':') ||
      !ReadNumber(text, pos, 2, parts.tm_sec)) {
    return std::nullopt;
  }
  instant.micros = static_cast<int64_t>(timegm(&parts)) * 1'000'000;
  if (!ReadFractionAndZone(text, pos, instant)) return std::nullopt;
  return instant;
}

std::string FormatInstant(const Instant& instant) {
  UtcTime time = SplitUtc(instant.micros);
  std::string out = fmt::format("{:04d}-{:02d}-{:02d}", time.year, time.month, time.day);
  if (instant.date_only) return out;
  out +=
      fmt::format("{}{:02d}:{:02d}:{:02d}", instant.separator, time.hour, time.minute, time.second);
  if (instant.fraction_digits > 0) {
    std::string fraction = fmt::format("{:06d}", time.microsecond);
    fraction.resize(static_cast<size_t>(instant.fraction_digits), '0');
    out += "." + fraction;
  }
  return out + instant.zone;
}

template <typename T>
int Sign(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

}  // namespace

int CompareCursors(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integer() && b.is_integer()) return Sign(a.AsInteger(), b.AsInteger());
    return Sign(a.AsDouble(), b.AsDouble());
  }
  if (a.is_string() && b.is_string()) {
    std::optional<Instant> first = ParseInstant(a.AsString());
    std::optional<Instant> second = first ? ParseInstant(b.AsString()) : std::nullopt;
    if (first && second) return Sign(first->micros, second->micros);
    return Sign(a.AsString(), b.AsString());
  }
  return Sign(a.ToDisplayString(), b.ToDisplayString());
}

Result<Value> MoveCursorBack(const Value& value, double lag) {
  if (lag == 0) return value;
  if (value.is_integer() && std::floor(lag) == lag) {
    return Value(value.AsInteger() - static_cast<int64_t>(lag));
  }
  if (value.is_number()) return Value(value.AsDouble() - lag);
  if (value.is_string()) {
    if (std::optional<Instant> instant = ParseInstant(value.AsString())) {
      double unit = instant->date_only ? 86'400e6 : 1e6;
      instant->micros -= static_cast<int64_t>(std::llround(lag * unit));
      return Value(FormatInstant(*instant));
    }
  }
  return Fail(InvalidArgumentError(
      fmt::format("incremental.lag needs a number, a date or an ISO 8601 timestamp as cursor "
                  "value, got {}",
                  value.ToJson())));
}

CursorState CursorState::FromValue(const Value& stored) {
  CursorState state;
  if (const Value* cursor = stored.Find("cursor"); cursor != nullptr && !cursor->is_null()) {
    state.cursor_ = *cursor;
  }
  if (const Value* seen = stored.Find("seen"); seen != nullptr && seen->is_list()) {
    for (const Value& pair : seen->AsList()) {
      if (!pair.is_list() || pair.AsList().size() != 2) continue;
      const Value& cursor = pair.AsList()[0];
      state.seen_[{cursor.ToJson(), pair.AsList()[1].ToDisplayString()}] = cursor;
    }
  }
  return state;
}

Value CursorState::ToValue() const {
  Value::List seen;
  seen.reserve(seen_.size());
  for (const auto& [key, cursor] : seen_) seen.emplace_back(Value::List{cursor, Value(key.second)});
  return Value(Value::Map{{"cursor", cursor_.value_or(Value())}, {"seen", Value(std::move(seen))}});
}

bool CursorState::Seen(const Value& cursor, std::string_view id) const {
  return seen_.contains({cursor.ToJson(), std::string(id)});
}

void CursorState::Add(const Value& cursor, std::string_view id, double lag) {
  bool moved = !cursor_ || CompareCursors(cursor, *cursor_) > 0;
  if (moved) cursor_ = cursor;
  seen_[{cursor.ToJson(), std::string(id)}] = cursor;
  if (moved) Prune(lag);
}

void CursorState::Merge(const CursorState& other, double lag) {
  for (const auto& [key, cursor] : other.seen_) seen_[key] = cursor;
  if (other.cursor_ && (!cursor_ || CompareCursors(*other.cursor_, *cursor_) > 0)) {
    cursor_ = other.cursor_;
  }
  Prune(lag);
}

void CursorState::Prune(double lag) {
  if (!cursor_) return;
  // A cursor the lag cannot move (text of no known shape) keeps only its own value.
  Result<Value> moved = MoveCursorBack(*cursor_, lag);
  const Value& floor = moved ? *moved : *cursor_;
  std::erase_if(seen_, [&](const auto& entry) { return CompareCursors(entry.second, floor) < 0; });
}

Result<CursorWindow> CursorWindow::Make(const IncrementalSpec& spec, CursorState stored) {
  CursorWindow window;
  window.end_ = spec.end_value;
  window.row_order_ = spec.row_order;
  if (spec.end_value) stored = CursorState();
  if (stored.cursor()) {
    BIZON_ASSIGN_OR_RETURN(window.start_, MoveCursorBack(*stored.cursor(), spec.lag));
    // The lag never reaches back before the range's own start.
    if (spec.initial_value && CompareCursors(*window.start_, *spec.initial_value) < 0) {
      window.start_ = spec.initial_value;
    }
  } else {
    window.start_ = spec.initial_value;
  }
  window.stored_ = std::move(stored);
  return window;
}

CursorWindow::Verdict CursorWindow::Judge(const Value& cursor, std::string_view id) const {
  if (end_ && CompareCursors(cursor, *end_) >= 0) {
    return row_order_ == IncrementalSpec::RowOrder::kAscending ? Verdict::kStop : Verdict::kSkip;
  }
  if (start_ && CompareCursors(cursor, *start_) < 0) {
    return row_order_ == IncrementalSpec::RowOrder::kDescending ? Verdict::kStop : Verdict::kSkip;
  }
  return stored_.Seen(cursor, id) ? Verdict::kSkip : Verdict::kKeep;
}

}  // namespace bizon
