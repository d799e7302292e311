#include "config/references.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "bizon/secret_mask.h"
#include "config/yaml_loader.h"

namespace bizon {
namespace {

TEST(ReferencesTest, ResolvesWholeAndInlineReferences) {
  setenv("BIZON_TEST_USER", "alice", 1);
  setenv("BIZON_TEST_PASSWORD", "s3cr3t-value", 1);
  auto config = ParseYaml(
      "a: env://BIZON_TEST_USER\n"
      "b: \"postgres://${env://BIZON_TEST_USER}:${ env://BIZON_TEST_PASSWORD }@host/db\"\n"
      "c: https://example.invalid/x\n"
      "d: [env://BIZON_TEST_USER]\n",
      "t.yml");
  ASSERT_TRUE(config.has_value());
  ReferenceResolver resolver{Value()};
  ASSERT_TRUE(resolver.ResolveAll(*config, "t.yml").ok());
  EXPECT_EQ(config->GetString("a"), "alice");
  EXPECT_EQ(config->GetString("b"), "postgres://alice:s3cr3t-value@host/db");
  EXPECT_EQ(config->GetString("c"), "https://example.invalid/x");
  EXPECT_EQ(config->Find("d")->AsList()[0], Value("alice"));
  EXPECT_EQ(SecretMask::Global().Redact("pw=s3cr3t-value"), "pw=****");
}

TEST(ReferencesTest, MissingVariableNamesPathAndLine) {
  unsetenv("BIZON_TEST_MISSING");
  auto config = ParseYaml("engine:\n  backend:\n    password: env://BIZON_TEST_MISSING\n", "t.yml");
  ASSERT_TRUE(config.has_value());
  ReferenceResolver resolver{Value()};
  Status status = resolver.ResolveAll(*config, "t.yml");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "t.yml:3: engine.backend.password: failed to resolve reference: environment "
            "variable 'BIZON_TEST_MISSING' is not set");
}

TEST(ReferencesTest, MalformedInlineTokenIsAnError) {
  auto config = ParseYaml("a: \"x ${not a reference} y\"\n", "t.yml");
  ASSERT_TRUE(config.has_value());
  ReferenceResolver resolver{Value()};
  Status status = resolver.ResolveAll(*config, "t.yml");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("malformed reference token '${not a reference}'"),
            std::string::npos)
      << status.message();
}

TEST(ReferencesTest, GsmErrorNamesPathLineAndReference) {
  // A path Secret Manager could not name is refused before any credentials or request.
  auto config = ParseYaml("x: 1\na: gsm://my secret\n", "t.yml");
  ASSERT_TRUE(config.has_value());
  ReferenceResolver resolver{Value()};
  Status status = resolver.ResolveAll(*config, "t.yml");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("t.yml:2: a: failed to resolve reference: cannot resolve "
                                  "gsm://my secret: expected '<id>'"),
            std::string::npos)
      << status.message();
}

TEST(ReferencesTest, CollectFindsWellFormedAndMalformed) {
  auto config = ParseYaml("a: env://X\nb: \"${env://Y} ${bad}\"\nc: plain\n", "t.yml");
  ASSERT_TRUE(config.has_value());
  std::vector<ReferenceSite> malformed;
  auto sites = ReferenceResolver::Collect(*config, &malformed);
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0].reference, "env://X");
  EXPECT_EQ(sites[1].yaml_path, "b");
  ASSERT_EQ(malformed.size(), 1u);
  EXPECT_EQ(malformed[0].reference, "${bad}");
}

TEST(ReferencesTest, EnvFileDoesNotOverrideEnvironment) {
  setenv("BIZON_TEST_KEEP", "from-env", 1);
  unsetenv("BIZON_TEST_NEW");
  std::string path = testing::TempDir() + "/bizon_test.env";
  std::ofstream(path) << "# comment\nBIZON_TEST_KEEP=from-file\nexport BIZON_TEST_NEW=\"quoted\"\n";
  ASSERT_TRUE(LoadEnvFile(path).ok());
  EXPECT_STREQ(std::getenv("BIZON_TEST_KEEP"), "from-env");
  EXPECT_STREQ(std::getenv("BIZON_TEST_NEW"), "quoted");
}

TEST(ReferencesTest, LegacyBizonEnvSubstitution) {
  setenv("BIZON_ENV_TEST_HOST", "db.local", 1);
  unsetenv("BIZON_ENV_TEST_UNSET");
  auto config =
      ParseYaml("a:\n  host: BIZON_ENV_TEST_HOST\n  other: BIZON_ENV_TEST_UNSET\n", "t.yml");
  ASSERT_TRUE(config.has_value());
  SubstituteLegacyEnv(*config);
  EXPECT_EQ(config->FindPath("a.host")->AsString(), "db.local");
  EXPECT_TRUE(config->FindPath("a.other")->is_null());
}

TEST(ReferencesTest, MaskSecretNeverShowsShortValues) {
  EXPECT_EQ(MaskSecret("abc"), "****");
  EXPECT_EQ(MaskSecret("abcdefghijkl"), "ab****kl");
}

}  // namespace
}  // namespace bizon
