// The registry holds exactly the connectors of the families this binary was built with; those of
// a family left out are named to it as unbuilt, with their family. Holds for every build: CI runs
// it in the full build and in the one with every family OFF.
#include "connectors/registration.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/connector_families.h"

namespace bizon {
namespace {

TEST(RegistrationTest, EachFamilysConnectorsAreRegisteredOrNamedAsLeftOut) {
  ConnectorRegistry registry;
  ASSERT_TRUE(RegisterBuiltinConnectors(registry).ok());
  const std::map<std::string, std::string> family_of = {
      {"kafka", "kafka"},
      {"postgres", "postgres"},
      {"duckdb", "duckdb"},
      {"bigquery", "bigquery"},
      {"bigquery_streaming", "bigquery"},
      {"bigquery_streaming_v2", "bigquery"},
  };
  for (const auto& [name, family] : family_of) {
    bool built = FindConnectorFamily(family)->built;
    bool registered =
        registry.FindSource(name) != nullptr || registry.FindDestination(name) != nullptr;
    EXPECT_EQ(registered, built) << name;
    EXPECT_EQ(registry.UnbuiltFamily(name), built ? "" : family) << name;
  }
  // The core's connectors are in every build.
  for (const char* source : {"dummy", "generator", "rest_api", "hubspot", "notion"}) {
    EXPECT_NE(registry.FindSource(source), nullptr) << source;
    EXPECT_EQ(registry.UnbuiltFamily(source), "") << source;
  }
  for (const char* destination : {"logger", "file", "gcs", "s3"}) {
    EXPECT_NE(registry.FindDestination(destination), nullptr) << destination;
  }
}

}  // namespace
}  // namespace bizon
