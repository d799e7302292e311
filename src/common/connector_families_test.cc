#include "common/connector_families.h"

#include <gtest/gtest.h>

#include <set>

#include "bizon/build_features.h"

namespace bizon {
namespace {

TEST(ConnectorFamiliesTest, ListsEachFamilyOnceWithItsOptionAndWhetherItWasBuilt) {
  std::set<std::string_view> names;
  for (const ConnectorFamily& family : ConnectorFamilies()) {
    EXPECT_TRUE(names.insert(family.name).second) << family.name;
    EXPECT_EQ(FindConnectorFamily(family.name), &family);
  }
  EXPECT_EQ(names, (std::set<std::string_view>{"kafka", "bigquery", "postgres", "rabbitmq",
                                               "python", "duckdb"}));
  EXPECT_EQ(FindConnectorFamily("kafka")->option, "BIZON_WITH_KAFKA");
  EXPECT_EQ(FindConnectorFamily("kafka")->built, BIZON_WITH_KAFKA == 1);
  EXPECT_EQ(FindConnectorFamily("python")->built, BIZON_WITH_PYTHON == 1);
  EXPECT_EQ(FindConnectorFamily("duckdb")->built, BIZON_WITH_DUCKDB == 1);
  EXPECT_EQ(FindConnectorFamily("mysql"), nullptr);
}

TEST(ConnectorFamiliesTest, DescribesTheBuiltFamiliesThenTheOnesLeftOut) {
  std::string text = DescribeConnectorFamilies();
  for (const ConnectorFamily& family : ConnectorFamilies()) {
    std::string_view part = family.built ? "with " : "without ";
    size_t at = text.find(part);
    ASSERT_NE(at, std::string::npos) << text;
    EXPECT_NE(text.find(family.name, at), std::string::npos) << text;
  }
}

TEST(ConnectorFamiliesTest, TheRefusalNamesWhatWasAskedAndTheOptionThatBuildsIt) {
  Status refused = NotBuiltError("the 'postgres' backend", "postgres");
  EXPECT_EQ(refused.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(refused.failure_class(), FailureClass::kConfig);
  EXPECT_EQ(refused.message(),
            "the 'postgres' backend is not built into this binary: it was configured with "
            "BIZON_WITH_POSTGRES=OFF; rebuild with -DBIZON_WITH_POSTGRES=ON");
}

}  // namespace
}  // namespace bizon
