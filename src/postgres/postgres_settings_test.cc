#include <gtest/gtest.h>

#include "postgres/postgres_client.h"

namespace bizon {
namespace {

TEST(PgTlsSettingsTest, ReadsTheSslKeys) {
  Value config(Value::Map{{"host", Value("db")},
                          {"database", Value("d")},
                          {"username", Value("u")},
                          {"sslmode", Value("verify-full")},
                          {"sslrootcert", Value("/ca.pem")},
                          {"sslcert", Value("/c.pem")},
                          {"sslkey", Value("/c.key")}});
  PgConnectionSettings settings = PgSettingsFromConfig(config);
  EXPECT_EQ(settings.sslmode, "verify-full");
  EXPECT_EQ(settings.sslrootcert, "/ca.pem");
  EXPECT_EQ(settings.sslcert, "/c.pem");
  EXPECT_EQ(settings.sslkey, "/c.key");
}

TEST(PgTlsSettingsTest, UnsetKeysLeaveLibpqDefaults) {
  PgConnectionSettings settings = PgSettingsFromConfig(Value(Value::Map{{"database", Value("d")}}));
  EXPECT_TRUE(settings.sslmode.empty());
  EXPECT_TRUE(settings.sslrootcert.empty());
}

TEST(PgTlsSettingsTest, DeclaresLibpqModes) {
  std::vector<FieldSpec> fields = PgTlsFields();
  ASSERT_EQ(fields.size(), 4u);
  EXPECT_EQ(fields[0].name, "sslmode");
  EXPECT_EQ(fields[0].enum_values,
            (std::vector<std::string>{"disable", "allow", "prefer", "require", "verify-ca",
                                      "verify-full"}));
  EXPECT_EQ(fields[3].name, "sslkey");
}

}  // namespace
}  // namespace bizon
