#include "engine/backend/backend_factory.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "bizon/build_features.h"
#include "common/connector_families.h"

namespace bizon {
namespace {

Value BackendOfType(const std::string& type) {
  return Value(Value::Map{
      {"type", Value(type)},
      {"config", Value(Value::Map{{"database", Value("state")}, {"schema", Value("bizon")}})}});
}

// Each backend of a family left out of this build is refused before it connects to anything, as a
// config failure naming the option that builds it. The full build has none to refuse; the build
// with every family OFF has three.
TEST(BackendFactoryTest, ABackendOfAFamilyLeftOutIsRefusedNamingItsOption) {
  int refused = 0;
  for (const char* type : {"postgres", "bigquery", "duckdb"}) {
    const ConnectorFamily* family = FindConnectorFamily(type);
    ASSERT_NE(family, nullptr);
    if (family->built) continue;
    auto opened = OpenBackend(BackendOfType(type));
    ASSERT_FALSE(opened.has_value()) << type;
    EXPECT_EQ(opened.error().code(), StatusCode::kUnimplemented);
    EXPECT_EQ(opened.error().failure_class(), FailureClass::kConfig);
    EXPECT_NE(opened.error().message().find(fmt::format("the '{}' backend", type)),
              std::string::npos)
        << opened.error().message();
    EXPECT_NE(opened.error().message().find(fmt::format("-D{}=ON", family->option)),
              std::string::npos)
        << opened.error().message();
    ++refused;
  }
  EXPECT_EQ(refused, (BIZON_WITH_POSTGRES ? 0 : 1) + (BIZON_WITH_BIGQUERY ? 0 : 1) +
                         (BIZON_WITH_DUCKDB ? 0 : 1));
}

}  // namespace
}  // namespace bizon
