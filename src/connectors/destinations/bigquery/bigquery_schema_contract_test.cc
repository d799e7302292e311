#include "connectors/destinations/bigquery/bigquery_schema_contract.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace bizon {
namespace {

Value Json(std::string_view text) {
  auto parsed = Value::FromJson(text);
  EXPECT_TRUE(parsed) << text;
  return parsed ? *parsed : Value();
}

std::vector<BqColumn> Columns() {
  return {{"id", BqColumnType::kInteger, BqColumnMode::kRequired, ""},
          {"amount", BqColumnType::kInteger, BqColumnMode::kNullable, ""},
          {"flag", BqColumnType::kBoolean, BqColumnMode::kNullable, ""}};
}

TEST(SchemaContractTest, NewColumnsTakeTheirTypeFromTheValue) {
  EXPECT_EQ(InferColumnType(Json("1")), BqColumnType::kInteger);
  EXPECT_EQ(InferColumnType(Json("1.5")), BqColumnType::kFloat);
  EXPECT_EQ(InferColumnType(Json("true")), BqColumnType::kBoolean);
  EXPECT_EQ(InferColumnType(Json(R"("x")")), BqColumnType::kString);
  EXPECT_EQ(InferColumnType(Json(R"({"a":1})")), BqColumnType::kJson);
  EXPECT_EQ(InferColumnType(Json("[1,2]")), BqColumnType::kJson);
}

TEST(SchemaContractTest, NumbersWidenIntegersToNumericThenBignumericOrFloatNeverString) {
  EXPECT_EQ(WidenedType(BqColumnType::kInteger, Json("1.5")), BqColumnType::kNumeric);
  EXPECT_EQ(WidenedType(BqColumnType::kInteger, Json("123456789.123456789")),
            BqColumnType::kNumeric);
  // Digits past NUMERIC's 9 decimals would be rounded off there.
  EXPECT_EQ(WidenedType(BqColumnType::kInteger, Json("1e-12")), BqColumnType::kBignumeric);
  EXPECT_EQ(WidenedType(BqColumnType::kInteger, Json("1e300")), BqColumnType::kFloat);
  EXPECT_EQ(WidenedType(BqColumnType::kNumeric, Json("1e30")), BqColumnType::kBignumeric);
  EXPECT_EQ(WidenedType(BqColumnType::kNumeric, Json("1e80")), BqColumnType::kFloat);
  EXPECT_EQ(WidenedType(BqColumnType::kBignumeric, Json("1e80")), std::nullopt);
  EXPECT_EQ(WidenedType(BqColumnType::kInteger, Json(R"("1.5")")), std::nullopt);
  EXPECT_EQ(WidenedType(BqColumnType::kInteger, Json(R"("abc")")), std::nullopt);
  EXPECT_EQ(WidenedType(BqColumnType::kBoolean, Json("2")), std::nullopt);
  EXPECT_EQ(WidenedType(BqColumnType::kDate, Json("2")), std::nullopt);
}

TEST(SchemaContractTest, EvolveAddsAndWidensAndRefusesWhatItCannotHold) {
  SchemaContractCheck check(SchemaContract::kEvolve, Columns());
  Value row = Json(R"({"id":1,"amount":2,"note":"new","tags":["a"],"nothing":null})");
  EXPECT_TRUE(check.Check(row).empty());
  EXPECT_EQ(row.ToJson(), R"({"id":1,"amount":2,"note":"new","tags":["a"]})");
  ASSERT_EQ(check.columns().size(), 5u);
  EXPECT_EQ(check.columns()[3].name, "note");
  EXPECT_EQ(check.columns()[3].type, BqColumnType::kString);
  EXPECT_EQ(check.columns()[4].type, BqColumnType::kJson);

  Value wider = Json(R"({"id":2,"amount":2.25})");
  EXPECT_TRUE(check.Check(wider).empty());
  EXPECT_EQ(check.columns()[1].type, BqColumnType::kNumeric);
  ASSERT_EQ(check.changes().size(), 3u);
  EXPECT_EQ(check.changes()[2].column, "amount");
  EXPECT_EQ(check.changes()[2].from, BqColumnType::kInteger);
  EXPECT_EQ(check.changes()[2].to, BqColumnType::kNumeric);

  Value text = Json(R"({"id":3,"amount":"lots","flag":"maybe"})");
  std::vector<ContractRefusal> refused = check.Check(text);
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(refused[0].column, "amount");
  EXPECT_EQ(refused[0].reason,
            "string 'lots' does not fit column 'amount' (NUMERIC), and evolve widens only "
            "numeric columns");
  EXPECT_EQ(refused[1].column, "flag");
  // Nothing turned into STRING.
  EXPECT_EQ(check.columns()[1].type, BqColumnType::kNumeric);
  EXPECT_EQ(check.columns()[2].type, BqColumnType::kBoolean);

  Value bad_name = Json(R"({"id":4,"first name":"x"})");
  refused = check.Check(bad_name);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].reason.find("cannot become a column"), std::string::npos);
}

TEST(SchemaContractTest, FreezeRefusesNewColumnsAndValuesThatDoNotFitNamingTheColumn) {
  SchemaContractCheck check(SchemaContract::kFreeze, Columns());
  Value row = Json(R"({"id":1,"extra":5})");
  std::vector<ContractRefusal> refused = check.Check(row);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].column, "extra");
  EXPECT_EQ(refused[0].reason, "column 'extra' is not in the table");
  EXPECT_EQ(refused[0].value, Value(5));
  Value typed = Json(R"({"id":1,"amount":1.5})");
  refused = check.Check(typed);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].reason, "number 1.5 does not fit column 'amount' (INTEGER)");
  EXPECT_TRUE(check.changes().empty());
  EXPECT_EQ(check.columns().size(), 3u);
}

TEST(SchemaContractTest, DiscardValueRemovesTheRefusedValuesAndAMissingRequiredRefusesTheRow) {
  SchemaContractCheck check(SchemaContract::kDiscardValue, Columns());
  Value row = Json(R"({"id":1,"amount":"x","extra":true,"flag":false})");
  std::vector<ContractRefusal> refused = check.Check(row);
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_FALSE(refused[0].whole_row);
  EXPECT_EQ(row.ToJson(), R"({"id":1,"flag":false})");

  Value keyless = Json(R"({"amount":1})");
  refused = check.Check(keyless);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_TRUE(refused[0].whole_row);
  EXPECT_EQ(refused[0].reason, "the REQUIRED column 'id' is missing");
  // A delete names its key only.
  Value deletes = Json(R"({"amount":1})");
  EXPECT_EQ(check.Check(deletes, /*deletes=*/true).size(), 0u);
}

TEST(SchemaContractTest, DiscardRowLeavesTheRowAsItIs) {
  SchemaContractCheck check(SchemaContract::kDiscardRow, Columns());
  Value row = Json(R"({"id":1,"amount":"x"})");
  EXPECT_EQ(check.Check(row).size(), 1u);
  EXPECT_EQ(row.ToJson(), R"({"id":1,"amount":"x"})");
}

// The check lets through exactly what the encoder writes.
TEST(SchemaContractTest, FitsColumnTypeAgreesWithTheEncoder) {
  const std::vector<BqColumnType> types = {
      BqColumnType::kString,  BqColumnType::kBytes,     BqColumnType::kInteger,
      BqColumnType::kFloat,   BqColumnType::kNumeric,   BqColumnType::kBignumeric,
      BqColumnType::kBoolean, BqColumnType::kTimestamp, BqColumnType::kDate,
      BqColumnType::kTime,    BqColumnType::kDatetime,  BqColumnType::kJson};
  const std::vector<std::string> values = {"1",
                                           "-7",
                                           "1.5",
                                           "1e300",
                                           "1e-12",
                                           R"("12")",
                                           R"("x")",
                                           "true",
                                           R"("true")",
                                           R"("2024-01-02")",
                                           R"("12:30:00")",
                                           R"("2024-01-02T03:04:05Z")",
                                           R"({"a":1})",
                                           "[1]",
                                           "1e40",
                                           "-0.000001"};
  for (BqColumnType type : types) {
    std::vector<BqColumn> columns = {{"v", type, BqColumnMode::kNullable, ""}};
    for (const std::string& text : values) {
      auto encoder = LoadFileEncoder::Make(columns, /*unnest=*/true);
      ASSERT_TRUE(encoder);
      Value row(Value::Map{{"v", Json(text)}});
      bool written = (*encoder)->AppendObject(row, "r").ok();
      EXPECT_EQ(FitsColumnType(type, Json(text)), written)
          << BqColumnTypeName(type) << " and " << text;
    }
  }
}

}  // namespace
}  // namespace bizon
