#include "config/pipeline_spec.h"

#include <gtest/gtest.h>

#include "config/yaml_loader.h"

namespace bizon {
namespace {

// A connector and a section declared outside config, each with its own hooks: config applies
// them without knowing either.
class PipelineSpecHooksTest : public testing::Test {
 protected:
  void SetUp() override {
    SourceDescriptor source{
        .name = "routed",
        .streams = {{.name = "events"}},
        .config = {.fields = {Option::String("route")}},
        // Takes `route` from the first stream's name, when the source has none.
        .normalize_config =
            [](Value& config) {
              const Value* first = config.FindPath("streams");
              Value* own = config.Find("source");
              if (first == nullptr || !first->is_list() || first->AsList().empty() ||
                  own == nullptr || own->Find("route") != nullptr) {
                return;
              }
              own->Set("route", first->AsList()[0].GetString("name"));
            },
        .check_pipeline = [](const Value& config) -> std::vector<ConfigRuleViolation> {
          if (config.Find("source")->GetString("route") == "nowhere") {
            return {{.path = "source.route", .message = "goes nowhere"}};
          }
          return {};
        },
        .factory = nullptr};
    ASSERT_TRUE(registry_.AddSource(std::move(source)).ok());
    ASSERT_TRUE(registry_.AddDestination({.name = "sink"}).ok());
  }

  PipelineDeclaration Declaration() const {
    auto section = [](std::string name) {
      return ConfigSection{.field = Option::Object(std::move(name), {Option::Integer("level")})};
    };
    PipelineDeclaration declaration{.registry = registry_,
                                    .engine = section("engine"),
                                    .monitoring = section("monitoring"),
                                    .alerting = section("alerting")};
    declaration.monitoring.check = [](const Value& block) -> std::vector<ConfigRuleViolation> {
      if (block.GetInteger("level") > 3) return {{.path = "level", .message = "too loud"}};
      return {};
    };
    return declaration;
  }

  /// The errors of `yaml` as `config validate` prints them.
  std::string Errors(std::string_view yaml) {
    auto raw = ParseYaml(yaml, "p.yml");
    EXPECT_TRUE(raw.has_value());
    PipelineDeclaration declaration = Declaration();
    NormalizeForConnectors(registry_, *raw);
    ValidationResult result = ValidateConfig(*raw, PipelineSpec(declaration));
    if (!result.has_errors()) CheckPipelineRules(declaration, *raw, result);
    normalized_ = result.normalized;
    return result.ErrorText("p.yml");
  }

  ConnectorRegistry registry_;
  Value normalized_;
};

TEST_F(PipelineSpecHooksTest, TheSourceCompletesTheConfigBeforeValidation) {
  EXPECT_EQ(Errors("name: p\n"
                   "source:\n  name: routed\n  stream: events\n  sync_mode: stream\n"
                   "destination:\n  name: sink\n  config: {}\n"
                   "streams:\n  - name: orders\n    destination:\n      table_id: a.b.c\n"),
            "");
  EXPECT_EQ(normalized_.FindPath("source.route")->AsString(), "orders");
}

TEST_F(PipelineSpecHooksTest, ConnectorAndSectionRulesAreReportedAtTheirLines) {
  EXPECT_EQ(Errors("name: p\n"
                   "source:\n  name: routed\n  stream: events\n  route: nowhere\n"
                   "destination:\n  name: sink\n  config: {}\n"
                   "monitoring:\n  level: 5\n"),
            "p.yml:5: source.route: goes nowhere\n"
            "p.yml:10: monitoring.level: too loud");
}

TEST_F(PipelineSpecHooksTest, TheSectionsAreDeclaredInTheirPlaceAmongConfigsOwnKeys) {
  std::vector<std::string> names;
  for (const FieldSpec& field : PipelineSpec(Declaration()).fields) names.push_back(field.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"name", "id", "source", "destination", "transforms", "engine",
                                      "secrets", "monitoring", "alerting", "streams"}));
}

}  // namespace
}  // namespace bizon
