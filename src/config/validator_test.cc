#include "config/validator.h"

#include <gtest/gtest.h>

#include "config/yaml_loader.h"

namespace bizon {
namespace {

FieldSpec ExampleSpec() {
  return {
      .type = FieldType::kObject,
      .fields =
          {{.name = "name", .type = FieldType::kString, .required = true},
           {.name = "mode",
            .type = FieldType::kEnum,
            .default_value = Value("full_refresh"),
            .enum_values = {"full_refresh", "incremental", "stream"}},
           {.name = "size",
            .type = FieldType::kInteger,
            .default_value = Value(10),
            .minimum = 1,
            .maximum = 100},
           {.name = "flag", .type = FieldType::kBoolean},
           {.name = "old", .type = FieldType::kString, .deprecated = "use new"},
           {.name = "legacy_reset",
            .type = FieldType::kBoolean,
            .default_value = Value(false),
            .deprecated = "use --reset"},
           {.name = "poll_every",
            .type = FieldType::kNumber,
            .default_value = Value(1),
            .no_effect = "messages are pushed"},
           {.name = "items", .type = FieldType::kList, .items = {{.type = FieldType::kInteger}}},
           {.name = "backend",
            .type = FieldType::kObject,
            .discriminator = "type",
            .variants =
                {{.tag = "sqlite",
                  .fields = {{.name = "type", .type = FieldType::kString},
                             {.name = "path", .type = FieldType::kString, .required = true}}},
                 {.tag = "postgres",
                  .fields = {{.name = "type", .type = FieldType::kString},
                             {.name = "host", .type = FieldType::kString, .required = true}}}},
            .default_variant = "sqlite"},
           {.name = "timeout",
            .type = FieldType::kAny,
            .one_of = {{.type = FieldType::kNumber, .description = "a number"},
                       {.type = FieldType::kList,
                        .description = "a pair",
                        .items = {{.type = FieldType::kNumber}}}}}},
      .unknown_keys = UnknownKeys::kError};
}

ValidationResult ValidateText(std::string_view text) {
  auto parsed = ParseYaml(text, "test.yml");
  EXPECT_TRUE(parsed.has_value()) << parsed.error().message();
  return ValidateConfig(*parsed, ExampleSpec());
}

std::string Errors(const ValidationResult& result) { return result.ErrorText("test.yml"); }

TEST(ValidatorTest, FillsDefaults) {
  ValidationResult result = ValidateText("name: x\n");
  ASSERT_FALSE(result.has_errors()) << Errors(result);
  EXPECT_EQ(result.normalized.GetString("mode"), "full_refresh");
  EXPECT_EQ(result.normalized.GetInteger("size"), 10);
  EXPECT_EQ(result.normalized.Find("flag"), nullptr);
}

TEST(ValidatorTest, EnumTypoNamesLineAndSuggestsClosest) {
  ValidationResult result = ValidateText("name: x\nmode: incremantal\n");
  EXPECT_EQ(Errors(result),
            "test.yml:2: mode: expected one of full_refresh, incremental, stream, got "
            "'incremantal' (did you mean 'incremental'?)");
}

TEST(ValidatorTest, WrongTypeIsReported) {
  ValidationResult result = ValidateText("name: x\nsize: [1]\nflag: maybe\n");
  EXPECT_NE(Errors(result).find("test.yml:2: size: expected an integer, got a list"),
            std::string::npos)
      << Errors(result);
  EXPECT_NE(Errors(result).find("test.yml:3: flag: expected true or false, got 'maybe'"),
            std::string::npos)
      << Errors(result);
}

TEST(ValidatorTest, BoundsAreChecked) {
  ValidationResult result = ValidateText("name: x\nsize: 1000\n");
  EXPECT_EQ(Errors(result), "test.yml:2: size: must be at most 100, got 1000");
}

// Found by fuzz_yaml_config: `+.inf` for an integer key was cast to int64_t (undefined).
TEST(ValidatorTest, NumbersOutsideInt64AreNoIntegers) {
  for (const char* size :
       {"+.inf", "-.inf", ".nan", "1e300", "9223372036854775808.0", "'99999999999999999999'"}) {
    ValidationResult result = ValidateText(std::string("name: x\nsize: ") + size + "\n");
    EXPECT_NE(Errors(result).find("test.yml:2: size: expected an integer"), std::string::npos)
        << size << ": " << Errors(result);
  }
  ValidationResult whole = ValidateText("name: x\nsize: 12.0\n");
  EXPECT_TRUE(Errors(whole).empty()) << Errors(whole);
  EXPECT_EQ(whole.normalized.GetInteger("size"), 12);
}

TEST(ValidatorTest, UnknownKeyIsAnErrorWithSuggestion) {
  ValidationResult result = ValidateText("name: x\nsiz: 3\n");
  EXPECT_NE(Errors(result).find("test.yml:2: siz: unknown key 'siz' (did you mean 'size'?)"),
            std::string::npos)
      << Errors(result);
}

TEST(ValidatorTest, MissingRequiredKey) {
  ValidationResult result = ValidateText("mode: stream\n");
  EXPECT_EQ(Errors(result), "test.yml:1: name: required key is missing");
}

TEST(ValidatorTest, DeprecatedKeyWarns) {
  ValidationResult result = ValidateText("name: x\nold: y\n");
  EXPECT_FALSE(result.has_errors());
  ASSERT_TRUE(result.has_warnings());
  EXPECT_EQ(result.diagnostics[0].Format("test.yml"), "test.yml:2: old: deprecated: use new");
}

TEST(ValidatorTest, DeprecatedKeyAtItsDefaultDoesNotWarn) {
  ValidationResult off = ValidateText("name: x\nlegacy_reset: false\n");
  EXPECT_FALSE(off.has_errors());
  EXPECT_FALSE(off.has_warnings()) << off.diagnostics[0].Format("test.yml");
  ValidationResult on = ValidateText("name: x\nlegacy_reset: true\n");
  ASSERT_TRUE(on.has_warnings());
  EXPECT_EQ(on.diagnostics[0].Format("test.yml"),
            "test.yml:2: legacy_reset: deprecated: use --reset");
}

TEST(ValidatorTest, NoEffectKeyWarnsUnlessAtItsDefault) {
  ValidationResult kept = ValidateText("name: x\npoll_every: 1\n");
  EXPECT_FALSE(kept.has_warnings()) << kept.diagnostics[0].Format("test.yml");
  ValidationResult changed = ValidateText("name: x\npoll_every: 5\n");
  EXPECT_FALSE(changed.has_errors());
  ASSERT_TRUE(changed.has_warnings());
  EXPECT_EQ(changed.diagnostics[0].Format("test.yml"),
            "test.yml:2: poll_every: 'poll_every' has no effect: messages are pushed");
  EXPECT_EQ(changed.normalized.Find("poll_every")->AsDouble(), 5);
}

TEST(ValidatorTest, ListItemsAreValidatedWithIndexInPath) {
  ValidationResult result = ValidateText("name: x\nitems: [1, two, 3]\n");
  EXPECT_EQ(Errors(result), "test.yml:2: items[1]: expected an integer, got 'two'");
}

TEST(ValidatorTest, DiscriminatedObjectPicksVariant) {
  ValidationResult ok = ValidateText("name: x\nbackend: {type: postgres, host: h}\n");
  EXPECT_FALSE(ok.has_errors()) << Errors(ok);
  ValidationResult defaulted = ValidateText("name: x\nbackend: {path: p}\n");
  EXPECT_FALSE(defaulted.has_errors()) << Errors(defaulted);
  ValidationResult missing = ValidateText("name: x\nbackend:\n  type: postgres\n");
  EXPECT_EQ(Errors(missing), "test.yml:3: backend.host: required key is missing");
  ValidationResult unknown = ValidateText("name: x\nbackend: {type: postgre}\n");
  EXPECT_NE(Errors(unknown).find("backend.type: expected one of sqlite, postgres, got "
                                 "'postgre' (did you mean 'postgres'?)"),
            std::string::npos)
      << Errors(unknown);
}

TEST(ValidatorTest, OneOfAcceptsEitherShape) {
  EXPECT_FALSE(ValidateText("name: x\ntimeout: 5\n").has_errors());
  EXPECT_FALSE(ValidateText("name: x\ntimeout: [5, 30]\n").has_errors());
  ValidationResult bad = ValidateText("name: x\ntimeout: soon\n");
  EXPECT_EQ(Errors(bad), "test.yml:2: timeout: expected a number or a pair, got 'soon'");
}

TEST(ValidatorTest, ReportsEveryErrorNotJustTheFirst) {
  ValidationResult result = ValidateText("mode: nope\nsize: 0\nextra: 1\n");
  int errors = 0;
  for (const Diagnostic& d : result.diagnostics) {
    errors += d.severity == Diagnostic::Severity::kError ? 1 : 0;
  }
  EXPECT_EQ(errors, 4) << Errors(result);
}

TEST(ClosestNameTest, OnlySuggestsPlausibleTypos) {
  EXPECT_EQ(ClosestName("strem", {"stream", "name"}), "stream");
  EXPECT_EQ(ClosestName("completely_else", {"stream", "name"}), "");
}

}  // namespace
}  // namespace bizon
