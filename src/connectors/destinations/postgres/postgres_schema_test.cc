#include "connectors/destinations/postgres/postgres_schema.h"

#include <gtest/gtest.h>

#include "connectors/destinations/postgres/postgres_destination.h"

namespace bizon {
namespace {

TEST(PostgresSchemaTest, AFractionWidensABigintToNumericNeverToText) {
  EXPECT_EQ(FitValue(PgColumnType::kBigint, JsonKind::kInteger), PgFit::kFits);
  EXPECT_EQ(FitValue(PgColumnType::kBigint, JsonKind::kNumber), PgFit::kWidens);
  EXPECT_EQ(WidenedFor(PgColumnType::kBigint, JsonKind::kNumber), PgColumnType::kNumeric);
  EXPECT_EQ(FitValue(PgColumnType::kBigint, JsonKind::kString), PgFit::kMismatch);
  EXPECT_EQ(FitValue(PgColumnType::kNumeric, JsonKind::kNumber), PgFit::kFits);
  EXPECT_EQ(FitValue(PgColumnType::kDouble, JsonKind::kInteger), PgFit::kFits);
}

TEST(PostgresSchemaTest, EachColumnTakesItsKindAndNullEverywhere) {
  for (PgColumnType type : {PgColumnType::kText, PgColumnType::kBigint, PgColumnType::kBoolean,
                            PgColumnType::kTimestamptz, PgColumnType::kJsonb}) {
    EXPECT_EQ(FitValue(type, JsonKind::kNull), PgFit::kFits);
  }
  EXPECT_EQ(FitValue(PgColumnType::kText, JsonKind::kInteger), PgFit::kFits);
  EXPECT_EQ(FitValue(PgColumnType::kText, JsonKind::kObject), PgFit::kMismatch);
  EXPECT_EQ(FitValue(PgColumnType::kBoolean, JsonKind::kString), PgFit::kMismatch);
  EXPECT_EQ(FitValue(PgColumnType::kTimestamptz, JsonKind::kInteger), PgFit::kMismatch);
  EXPECT_EQ(FitValue(PgColumnType::kJsonb, JsonKind::kArray), PgFit::kFits);
}

TEST(PostgresSchemaTest, NewColumnsAreTypedByTheirFirstValue) {
  EXPECT_EQ(InferredType(JsonKind::kString), PgColumnType::kText);
  EXPECT_EQ(InferredType(JsonKind::kInteger), PgColumnType::kBigint);
  EXPECT_EQ(InferredType(JsonKind::kNumber), PgColumnType::kDouble);
  EXPECT_EQ(InferredType(JsonKind::kBoolean), PgColumnType::kBoolean);
  EXPECT_EQ(InferredType(JsonKind::kObject), PgColumnType::kJsonb);
  EXPECT_FALSE(InferredType(JsonKind::kNull).has_value());
}

TEST(PostgresSchemaTest, WideningOnlyGoesTowardsMoreValues) {
  EXPECT_TRUE(IsWidening(PgColumnType::kBigint, PgColumnType::kNumeric));
  EXPECT_TRUE(IsWidening(PgColumnType::kNumeric, PgColumnType::kDouble));
  EXPECT_FALSE(IsWidening(PgColumnType::kNumeric, PgColumnType::kBigint));
  EXPECT_FALSE(IsWidening(PgColumnType::kBigint, PgColumnType::kText));
  EXPECT_FALSE(IsWidening(PgColumnType::kText, PgColumnType::kText));
}

TEST(PostgresSchemaTest, ProblemsNameTheColumnAndTheValue) {
  EXPECT_EQ(DescribeProblem({.column = "note", .kind = JsonKind::kString}),
            "key 'note' is not a column of the table (its value is a string)");
  EXPECT_EQ(
      DescribeProblem(
          {.column = "amount", .kind = JsonKind::kBoolean, .column_type = PgColumnType::kBigint}),
      "column 'amount' is bigint and the value is a boolean");
}

TEST(PostgresSchemaTest, LiteralsDoubleTheirQuotes) {
  EXPECT_EQ(SqlTextLiteral("it's"), "'it''s'");
  EXPECT_EQ(SqlTextLiteral("a\\b"), "'a\\b'");
}

}  // namespace
}  // namespace bizon
