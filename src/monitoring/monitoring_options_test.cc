#include "monitoring/monitoring_options.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

std::vector<ConfigRuleViolation> Check(Value monitoring) {
  return MonitoringSection().check(monitoring);
}

TEST(MonitoringOptionsTest, DatadogNeedsAConfigNamingAHost) {
  auto missing = Check(Value(Value::Map{{"type", Value("datadog")}}));
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].path, "");
  EXPECT_EQ(missing[0].message, "monitoring.config is required for type datadog");

  auto hostless =
      Check(Value(Value::Map{{"type", Value("datadog")},
                             {"config", Value(Value::Map{{"datadog_agent_port", Value(8125)}})}}));
  ASSERT_EQ(hostless.size(), 1u);
  EXPECT_EQ(hostless[0].path, "config");
  EXPECT_EQ(hostless[0].message,
            "either datadog_agent_host or datadog_host_env_var must be specified");

  EXPECT_TRUE(
      Check(Value(Value::Map{{"type", Value("datadog")},
                             {"config", Value(Value::Map{{"datadog_host_env_var", Value("H")}})}}))
          .empty());
  EXPECT_TRUE(Check(Value(Value::Map{{"type", Value("otel")}})).empty());
}

}  // namespace
}  // namespace bizon
