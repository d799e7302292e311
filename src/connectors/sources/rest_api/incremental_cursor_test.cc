// Cursor values compared and moved back by a lag, the tie-safe state, and the window's verdicts.
#include "connectors/sources/rest_api/incremental_cursor.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

TEST(IncrementalCursorTest, ComparesNumbersTimestampsAndText) {
  EXPECT_LT(CompareCursors(Value(9), Value(10)), 0);
  EXPECT_EQ(CompareCursors(Value(2), Value(2.0)), 0);
  // By instant, whatever the style: a fraction, a zone offset.
  EXPECT_EQ(CompareCursors(Value("2024-03-01T00:00:00Z"), Value("2024-03-01T01:00:00+01:00")), 0);
  EXPECT_LT(CompareCursors(Value("2024-03-01T00:00:00.5Z"), Value("2024-03-01T00:00:01Z")), 0);
  EXPECT_GT(CompareCursors(Value("2024-03-02"), Value("2024-03-01T23:59:59Z")), 0);
  EXPECT_LT(CompareCursors(Value("abc"), Value("abd")), 0);
}

TEST(IncrementalCursorTest, MovesBackInTheValuesOwnStyle) {
  EXPECT_EQ(MoveCursorBack(Value("2024-03-01T00:10:00Z"), 300).value(),
            Value("2024-03-01T00:05:00Z"));
  EXPECT_EQ(MoveCursorBack(Value("2024-03-01 00:00:00.250000"), 0.5).value(),
            Value("2024-02-29 23:59:59.750000"));
  EXPECT_EQ(MoveCursorBack(Value("2024-03-01T02:00:00+02:00"), 60).value(),
            Value("2024-02-29T23:59:00+00:00"));
  EXPECT_EQ(MoveCursorBack(Value("2024-03-01"), 2).value(), Value("2024-02-28"));
  EXPECT_EQ(MoveCursorBack(Value(int64_t{100}), 7).value(), Value(int64_t{93}));
  EXPECT_EQ(MoveCursorBack(Value(1.5), 0.25).value(), Value(1.25));
  EXPECT_EQ(MoveCursorBack(Value("v7"), 0).value(), Value("v7"));
  auto refused = MoveCursorBack(Value("v7"), 1);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("incremental.lag"), std::string::npos);
}

TEST(IncrementalCursorTest, TheStateKeepsThePairsAtTheCursorOrWithinTheLag) {
  CursorState state;
  state.Add(Value(int64_t{5}), "a", 0);
  state.Add(Value(int64_t{7}), "b", 0);
  state.Add(Value(int64_t{7}), "c", 0);
  EXPECT_EQ(state.cursor(), Value(int64_t{7}));
  EXPECT_TRUE(state.Seen(Value(int64_t{7}), "b"));
  EXPECT_FALSE(state.Seen(Value(int64_t{5}), "a"));  // Behind the cursor, without a lag.

  CursorState lagged;
  for (int i = 1; i <= 10; ++i) lagged.Add(Value(int64_t{i}), std::to_string(i), 3);
  EXPECT_TRUE(lagged.Seen(Value(int64_t{7}), "7"));
  EXPECT_FALSE(lagged.Seen(Value(int64_t{6}), "6"));

  // Through its stored form.
  CursorState stored = CursorState::FromValue(Value::FromJson(lagged.ToValue().ToJson()).value());
  EXPECT_EQ(stored.cursor(), Value(int64_t{10}));
  EXPECT_TRUE(stored.Seen(Value(int64_t{8}), "8"));
  CursorState merged;
  merged.Merge(stored, 0);
  EXPECT_TRUE(merged.Seen(Value(int64_t{10}), "10"));
  EXPECT_FALSE(merged.Seen(Value(int64_t{8}), "8"));
}

TEST(IncrementalCursorTest, TheWindowStartsAtTheCursorMinusTheLagAndSkipsWhatItSaw) {
  IncrementalSpec spec{.cursor_field = "updated_at", .lag = 60};
  CursorState stored;
  stored.Add(Value("2024-03-01T00:10:00Z"), "30", spec.lag);
  stored.Add(Value("2024-03-01T00:09:30Z"), "29", spec.lag);
  CursorWindow window = CursorWindow::Make(spec, stored).value();
  EXPECT_EQ(window.start(), Value("2024-03-01T00:09:00Z"));
  EXPECT_EQ(window.Judge(Value("2024-03-01T00:10:00Z"), "30"), CursorWindow::Verdict::kSkip);
  EXPECT_EQ(window.Judge(Value("2024-03-01T00:10:00Z"), "31"), CursorWindow::Verdict::kKeep);
  EXPECT_EQ(window.Judge(Value("2024-03-01T00:09:30Z"), "32"), CursorWindow::Verdict::kKeep);
  EXPECT_EQ(window.Judge(Value("2024-03-01T00:08:00Z"), "33"), CursorWindow::Verdict::kSkip);
}

TEST(IncrementalCursorTest, ARangeIgnoresTheStoredStateAndStopsByRowOrder) {
  IncrementalSpec spec{.cursor_field = "n",
                       .initial_value = Value(int64_t{10}),
                       .end_value = Value(int64_t{20}),
                       .row_order = IncrementalSpec::RowOrder::kAscending};
  CursorState stored;
  stored.Add(Value(int64_t{15}), "x", 0);
  CursorWindow window = CursorWindow::Make(spec, stored).value();
  EXPECT_EQ(window.start(), Value(int64_t{10}));
  EXPECT_EQ(window.Judge(Value(int64_t{15}), "x"), CursorWindow::Verdict::kKeep);
  EXPECT_EQ(window.Judge(Value(int64_t{9}), "y"), CursorWindow::Verdict::kSkip);
  EXPECT_EQ(window.Judge(Value(int64_t{20}), "z"), CursorWindow::Verdict::kStop);

  spec.row_order = IncrementalSpec::RowOrder::kDescending;
  CursorWindow descending = CursorWindow::Make(spec, CursorState()).value();
  EXPECT_EQ(descending.Judge(Value(int64_t{9}), "y"), CursorWindow::Verdict::kStop);
  EXPECT_EQ(descending.Judge(Value(int64_t{25}), "w"), CursorWindow::Verdict::kSkip);
}

}  // namespace
}  // namespace bizon
