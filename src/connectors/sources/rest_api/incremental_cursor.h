// The incremental cursor of a rest_api resource: how cursor values compare, how a lag moves one
// back, which records a run keeps, and the state carried from page to page and from run to run.
//
// The state is tie-safe: beside the largest cursor value it keeps the (cursor, record id) pair of
// every record loaded at that value, or within `lag` of it. The next run starts at the cursor
// (minus the lag) inclusively, so rows that share the boundary timestamp, or arrive late inside
// the lag window, are read again; a pair already in the state is a record already loaded and is
// skipped, any other is new. Rows with equal timestamps across a page or run boundary are thus
// neither lost nor repeated.
//
// Thread-compatible values; a CursorWindow is read from several threads at once (const only).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "bizon/status.h"
#include "bizon/value.h"
#include "connectors/sources/rest_api/rest_endpoint.h"

namespace bizon {

/// Orders cursor values: numbers numerically, ISO 8601 timestamps and dates by instant, other
/// text by bytes; values of different kinds by their text. Negative, zero or positive.
int CompareCursors(const Value& a, const Value& b);

/// `value` moved back by `lag`: seconds for an ISO 8601 timestamp (written back in UTC, in the
/// value's own style), days for a date (YYYY-MM-DD), units for a number. Other text fails.
Result<Value> MoveCursorBack(const Value& value, double lag);

/// One resource's incremental state, stored as {"cursor": v, "seen": [[v, id], ...]}.
class CursorState {
 public:
  static CursorState FromValue(const Value& stored);
  Value ToValue() const;

  const std::optional<Value>& cursor() const { return cursor_; }
  bool empty() const { return !cursor_.has_value(); }
  /// Whether the record (cursor, id) was loaded already.
  bool Seen(const Value& cursor, std::string_view id) const;
  /// Records a loaded record; pairs that fall more than `lag` behind the largest cursor are
  /// dropped.
  void Add(const Value& cursor, std::string_view id, double lag);
  /// Adds every pair of `other`.
  void Merge(const CursorState& other, double lag);

 private:
  void Prune(double lag);

  std::optional<Value> cursor_;
  // (cursor as JSON, id) -> cursor.
  std::map<std::pair<std::string, std::string>, Value> seen_;
};

/// What a run keeps of one resource: the range from the stored cursor (minus the lag) or
/// `initial_value`, up to `end_value`, without the records the stored state has seen.
class CursorWindow {
 public:
  /// `stored`: the previous run's state (empty on a first run, or with an end_value: a
  /// backfill range reads the same records whatever was loaded before).
  static Result<CursorWindow> Make(const IncrementalSpec& spec, CursorState stored);

  /// The lower bound: sent in `param` and filtered on (inclusive). Unset: no bound.
  const std::optional<Value>& start() const { return start_; }
  const CursorState& stored() const { return stored_; }

  enum class Verdict {
    kKeep,
    kSkip,
    /// Past the range in the declared row order: skipped, and paging stops.
    kStop,
  };
  Verdict Judge(const Value& cursor, std::string_view id) const;

 private:
  CursorState stored_;
  std::optional<Value> start_;
  std::optional<Value> end_;
  IncrementalSpec::RowOrder row_order_ = IncrementalSpec::RowOrder::kNone;
};

}  // namespace bizon
