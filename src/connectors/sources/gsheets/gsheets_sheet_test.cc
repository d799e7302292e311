#include "connectors/sources/gsheets/gsheets_sheet.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

TEST(GsheetsSheetTest, SpreadsheetIdFromItsUrl) {
  EXPECT_EQ(ExtractSpreadsheetId("https://docs.google.com/spreadsheets/d/1AbC-d_9/edit#gid=0"),
            "1AbC-d_9");
  EXPECT_EQ(ExtractSpreadsheetId("https://docs.google.com/spreadsheets/d/xyz"), "xyz");
  EXPECT_EQ(ExtractSpreadsheetId("https://docs.google.com/document/d/xyz/edit"), std::nullopt);
  EXPECT_EQ(ExtractSpreadsheetId("https://docs.google.com/spreadsheets/d//edit"), std::nullopt);
}

TEST(GsheetsSheetTest, SqlNamesKeepTheOriginalsDoubleUnderscore) {
  EXPECT_EQ(SqlColumnName("firstName"), "first_name");
  EXPECT_EQ(SqlColumnName("First Name"), "first__name");
  EXPECT_EQ(SqlColumnName("UserID"), "user_i_d");
  EXPECT_EQ(SqlColumnName("age"), "age");
  EXPECT_EQ(SqlColumnName("Élan vital"), "Élan_vital");
}

TEST(GsheetsSheetTest, CellsAreNumericisedAsGspreadDoes) {
  EXPECT_EQ(CellJson(""), R"("")");
  EXPECT_EQ(CellJson("42"), "42");
  EXPECT_EQ(CellJson(" -7 "), "-7");
  EXPECT_EQ(CellJson("+3"), "3");
  EXPECT_EQ(CellJson("007"), "7");
  EXPECT_EQ(CellJson("123456789012345678901234567890"), "123456789012345678901234567890");
  EXPECT_EQ(CellJson("1.5"), "1.5");
  EXPECT_EQ(CellJson("1e3"), "1000.0");
  EXPECT_EQ(CellJson("2.50"), "2.5");
  EXPECT_EQ(CellJson("1_000"), R"("1_000")");
  EXPECT_EQ(CellJson("1,234"), R"("1,234")");
  EXPECT_EQ(CellJson("inf"), R"("inf")");
  EXPECT_EQ(CellJson("0x10"), R"("0x10")");
  EXPECT_EQ(CellJson("12%"), R"("12%")");
  EXPECT_EQ(CellJson("Zoë \"Z\""), R"("Zoë \"Z\"")");
}

TEST(GsheetsSheetTest, RowsAreKeyedByTheHeaderAndPadded) {
  auto rows = ReadSheetValues(*Value::FromJson(R"({"range": "'Contacts'!A1:Z1000",
      "majorDimension": "ROWS", "values": [["firstName", "Age", "City"], ["Ada", "36"], [],
      ["Bob", "", "Paris", "extra"]]})"),
                              "GET x");
  ASSERT_TRUE(rows) << rows.error().message();
  auto records = SheetRecords(*rows, {});
  ASSERT_TRUE(records) << records.error().message();
  EXPECT_EQ(*records, (std::vector<std::string>{
                          R"({"first_name":"Ada","age":36,"city":"","":""})",
                          R"({"first_name":"","age":"","city":"","":""})",
                          R"({"first_name":"Bob","age":"","city":"Paris","":"extra"})"}));
  auto raw = SheetRecords(*rows, {.convert_to_sql = false});
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->front(), R"({"firstName":"Ada","Age":36,"City":"","":""})");
}

TEST(GsheetsSheetTest, EmptySheetsAndHeaderOnly) {
  auto empty = ReadSheetValues(*Value::FromJson(R"({"range": "A1:Z1000"})"), "GET x");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(SheetRecords(*empty, {})->empty());
  EXPECT_TRUE(SheetRecords({{"a", "b"}}, {})->empty());
}

TEST(GsheetsSheetTest, DuplicateHeadersAreRefusedUnlessColumnsAreChosen) {
  SheetRows rows = {{"id", "name", "name"}, {"1", "a", "b"}};
  auto all = SheetRecords(rows, {});
  ASSERT_FALSE(all);
  EXPECT_EQ(all.error().failure_class(), FailureClass::kSource);
  EXPECT_EQ(all.error().message(),
            R"(Duplicate column names in the header row: "name" (name them uniquely, or list )"
            R"(the columns to keep in column_names))");
  auto chosen = SheetRecords(rows, {.column_names = {"id"}});
  ASSERT_TRUE(chosen);
  EXPECT_EQ(*chosen, (std::vector<std::string>{R"({"id":1})"}));
  // A repeated header that is chosen reads its last column, as gspread's dict(zip()).
  auto repeated = SheetRecords(rows, {.column_names = {"name", "id"}});
  ASSERT_TRUE(repeated);
  EXPECT_EQ(*repeated, (std::vector<std::string>{R"({"id":1,"name":"b"})"}));
}

TEST(GsheetsSheetTest, ColumnNamesMustBeUniqueAndInTheHeader) {
  SheetRows rows = {{"id", "Full Name"}, {"1", "Ada"}};
  auto twice = SheetRecords(rows, {.column_names = {"id", "id"}});
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message(), R"(Duplicate column names in column_names: "id")");
  auto missing = SheetRecords(rows, {.column_names = {"email"}});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message(), R"(Column name "email" not found in worksheet)");
  auto subset = SheetRecords(rows, {.column_names = {"Full Name"}});
  ASSERT_TRUE(subset);
  EXPECT_EQ(*subset, (std::vector<std::string>{R"({"full__name":"Ada"})"}));
}

TEST(GsheetsSheetTest, MalformedValuesAreSourceErrors) {
  auto not_list = ReadSheetValues(*Value::FromJson(R"({"values": {"a": 1}})"), "GET u");
  ASSERT_FALSE(not_list);
  EXPECT_EQ(not_list.error().message(), "the answer of GET u has a 'values' that is not a list");
  auto bad_row = ReadSheetValues(*Value::FromJson(R"({"values": [["a"], 3]})"), "GET u");
  ASSERT_FALSE(bad_row);
  EXPECT_EQ(bad_row.error().failure_class(), FailureClass::kSource);
}

}  // namespace
}  // namespace bizon
