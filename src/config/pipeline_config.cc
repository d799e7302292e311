#include "config/pipeline_config.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/write_disposition.h"
#include "config/pipeline_spec.h"
#include "config/references.h"
#include "config/validator.h"
#include "config/yaml_loader.h"

namespace bizon {

std::string LoadedConfig::PipelineId() const {
  const Value* id = config.Find("id");
  if (id != nullptr && id->is_string() && !id->AsString().empty()) return id->AsString();
  return config.GetString("name");
}

Result<Value> LoadRawConfig(const std::string& path, const LoadOptions& options) {
  if (!options.env_file.empty()) {
    Status loaded = LoadEnvFile(options.env_file);
    if (!loaded.ok()) return Fail(loaded.WithFailureClass(FailureClass::kConfig));
  } else if (std::string found = FindEnvFile(); !found.empty()) {
    LoadEnvFile(found).IgnoreError();  // An unreadable auto-detected .env is not the user's ask.
  }
  BIZON_ASSIGN_OR_RETURN(Value raw, LoadYamlFile(path));
  SubstituteLegacyEnv(raw);
  return raw;
}

namespace {

/// A `streams:` entry's `destination.record_schema` is the column list of its table: it becomes
/// the destination's `record_schemas` entry for `destination.table_id` (with `clustering_keys`
/// when the stream sets them), so `unnest: true` finds it. An entry the destination already lists
/// for the same id is replaced (the streams block wins, as the original's stream runner does);
/// entries for other ids stay.
void ApplyStreamsToDestinationSchemas(Value& raw) {
  Value* destination = raw.Find("destination");
  const Value* streams = raw.Find("streams");
  if (destination == nullptr || !destination->is_map() || streams == nullptr ||
      !streams->is_list()) {
    return;
  }
  Value::List derived;
  for (const Value& stream : streams->AsList()) {
    const Value* schema = stream.FindPath("destination.record_schema");
    const Value* table = stream.FindPath("destination.table_id");
    if (schema == nullptr || schema->is_null() || table == nullptr || !table->is_string()) {
      continue;
    }
    Value entry(Value::Map{{"destination_id", *table}, {"record_schema", *schema}});
    if (const Value* keys = stream.FindPath("destination.clustering_keys");
        keys != nullptr && !keys->is_null()) {
      entry.Set("clustering_keys", *keys);
    }
    for (const FieldSpec& policy : TablePolicyFields()) {
      if (const Value* value = stream.FindPath("destination." + policy.name);
          value != nullptr && !value->is_null()) {
        entry.Set(policy.name, *value);
      }
    }
    entry.set_mark(stream.mark());
    derived.push_back(std::move(entry));
  }
  if (derived.empty()) return;
  Value& config = destination->GetOrCreateMap("config");
  Value* schemas = config.Find("record_schemas");
  if (schemas == nullptr || schemas->is_null()) {
    config.Set("record_schemas", Value(std::move(derived)));
    return;
  }
  if (!schemas->is_list()) return;  // Validation reports the wrong type.
  Value::List& entries = schemas->AsList();
  for (Value& entry : derived) {
    std::string id = entry.GetString("destination_id");
    auto same = std::find_if(entries.begin(), entries.end(), [&](const Value& listed) {
      return listed.is_map() && listed.GetString("destination_id") == id;
    });
    if (same != entries.end()) {
      *same = std::move(entry);
    } else {
      entries.push_back(std::move(entry));
    }
  }
}

}  // namespace

Result<LoadedConfig> LoadPipelineConfig(const std::string& path,
                                        const PipelineDeclaration& declaration,
                                        const LoadOptions& options) {
  BIZON_ASSIGN_OR_RETURN(Value raw, LoadRawConfig(path, options));

  // Command-line overrides, only for flags actually given.
  if (options.log_level || options.runner) {
    Value& runner = raw.GetOrCreateMap("engine").GetOrCreateMap("runner");
    if (options.log_level) runner.Set("log_level", *options.log_level);
    if (options.runner) runner.Set("type", *options.runner);
  }
  if (options.custom_source)
    raw.GetOrCreateMap("source").Set("source_file_path", *options.custom_source);
  if (options.stream) raw.GetOrCreateMap("source").Set("stream", *options.stream);

  if (!options.skip_references) {
    ReferenceResolver resolver(raw.Find("secrets") != nullptr ? *raw.Find("secrets") : Value());
    Status resolved = resolver.ResolveAll(raw, path);
    if (!resolved.ok()) return Fail(resolved.WithFailureClass(FailureClass::kConfig));
  }

  std::string custom_source_name;
  if (const Value* file = raw.FindPath("source.source_file_path");
      file != nullptr && file->is_string() && !file->AsString().empty()) {
    custom_source_name = raw.FindPath("source.name") != nullptr
                             ? raw.FindPath("source.name")->ToDisplayString()
                             : "custom";
  }
  NormalizeForConnectors(declaration.registry, raw);
  ApplyStreamsToDestinationSchemas(raw);
  ValidationResult result = ValidateConfig(raw, PipelineSpec(declaration, custom_source_name));
  ExplainUnbuiltConnectors(declaration.registry, raw, result);
  // --reset is applied after validation: it is the supported way to ask for a reset, so it must
  // not draw the deprecation warning meant for `source.reset` in the file.
  if (options.reset && result.normalized.Find("source") != nullptr) {
    result.normalized.Find("source")->Set("reset", true);
  }
  if (!result.has_errors()) CheckPipelineRules(declaration, raw, result);
  if (result.has_errors()) {
    return Fail(InvalidArgumentError(result.ErrorText(path)));
  }
  LoadedConfig loaded{.file_name = path,
                      .raw = std::move(raw),
                      .config = std::move(result.normalized),
                      .warnings = {}};
  for (Diagnostic& diagnostic : result.diagnostics) {
    if (diagnostic.severity == Diagnostic::Severity::kWarning) {
      loaded.warnings.push_back(std::move(diagnostic));
    }
  }
  return loaded;
}

}  // namespace bizon
