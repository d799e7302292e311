// Fuzz target: a pipeline file as `bizon run` reads it. The bytes go through the YAML loader
// (yaml-cpp plus the YAML 1.1 scalar resolution) and, when they parse, through validation
// against the pipeline spec, with one source and one destination declared so that the
// discriminated `source:` and `destination:` branches are walked too.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "alerting/alerting_options.h"
#include "bizon/registry.h"
#include "config/pipeline_spec.h"
#include "config/validator.h"
#include "config/yaml_loader.h"
#include "engine/engine_options.h"
#include "monitoring/monitoring_options.h"

namespace {

const bizon::ConnectorRegistry& Registry() {
  static const bizon::ConnectorRegistry registry = [] {
    bizon::ConnectorRegistry built;
    bizon::SourceDescriptor source{
        .name = "dummy",
        .streams = {{.name = "creatures", .supports_incremental = true}},
        .config = {.fields = {bizon::AuthenticationField({"api_key", "basic"}, false),
                              {.name = "sleep", .type = bizon::FieldType::kNumber}}}};
    (void)built.AddSource(std::move(source));
    bizon::DestinationDescriptor destination{
        .name = "logger", .config = {.unknown_keys = bizon::UnknownKeys::kIgnore}};
    (void)built.AddDestination(std::move(destination));
    return built;
  }();
  return registry;
}

/// As cli/pipeline_declaration.cc assembles it, with the sections of the engine, monitoring and
/// alerting.
const bizon::PipelineDeclaration& Declaration() {
  static const bizon::PipelineDeclaration declaration{.registry = Registry(),
                                                      .engine = bizon::EngineSection(),
                                                      .monitoring = bizon::MonitoringSection(),
                                                      .alerting = bizon::AlertingSection()};
  return declaration;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = bizon::ParseYaml(text, "fuzz.yml");
  if (!parsed) return 0;
  static const bizon::FieldSpec spec = bizon::PipelineSpec(Declaration());
  bizon::ValidationResult result = bizon::ValidateConfig(*parsed, spec);
  if (!result.has_errors()) bizon::CheckPipelineRules(Declaration(), *parsed, result);
  (void)result.ErrorText("fuzz.yml");
  return 0;
}
