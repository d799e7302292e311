#include "config/pipeline_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/connector_families.h"
#include "common/write_disposition.h"

namespace bizon {
namespace {

/// A connector's own options over the common ones: one of the same name replaces it, the others
/// follow them.
void MergeFields(const std::vector<FieldSpec>& own_fields, std::vector<FieldSpec>& fields) {
  for (const FieldSpec& own : own_fields) {
    auto existing = std::find_if(fields.begin(), fields.end(),
                                 [&](const FieldSpec& f) { return f.name == own.name; });
    if (existing != fields.end()) {
      *existing = own;
    } else {
      fields.push_back(own);
    }
  }
}

void SourceVariantFields(const SourceDescriptor& descriptor, VariantSpec& variant) {
  std::vector<FieldSpec> fields = CommonSourceFields();
  std::vector<std::string> stream_names;
  stream_names.reserve(descriptor.streams.size());
  for (const StreamSpec& stream : descriptor.streams) stream_names.push_back(stream.name);
  for (FieldSpec& field : fields) {
    if (field.name == "stream" && !descriptor.streams_from_config) {
      field.type = FieldType::kEnum;
      field.enum_values = stream_names;
    }
  }
  MergeFields(descriptor.config.fields, fields);
  variant.fields = std::move(fields);
}

FieldSpec HttpField() {
  FieldSpec timeout = {
      .name = "timeout",
      .type = FieldType::kAny,
      .description = "Connect and read timeouts in seconds, or one number for both.",
      .default_value = Value(Value::List{Value(10), Value(60)}),
      .one_of = {Option::Number("", "a number of seconds"),
                 Option::List("", Option::Number(""), "a [connect, read] pair")}};
  std::vector<FieldSpec> retries = {
      Option::Integer("total").Default(10).Minimum(0),
      Option::Number("backoff_factor").Default(2).Minimum(0),
      Option::List("status_forcelist", Option::Integer(""))
          .Default(Value(Value::List{429, 500, 502, 503, 504, 520, 522, 524})),
      Option::List("allowed_methods", Option::String(""))
          .Default(Value(Value::List{"GET", "POST"})),
      Option::Number("retry_after_max",
                     "Cap on a Retry-After wait; null honours the header as sent.")
          .NullIsValue()
          .Default(120),
  };
  return Option::Object(
             "http",
             {std::move(timeout),
              Option::Boolean("raise_for_status", "Fail on 4xx/5xx responses.").Default(true),
              Option::Object("retries", std::move(retries)).Default(Value::EmptyMap())},
             "Opt-in HTTP policy; without it the historical policy applies.")
      .OnUnknownKeys(UnknownKeys::kWarn);
}

/// `source`: a variant per registered source, tagged by its name.
FieldSpec SourceField(const ConnectorRegistry& registry, std::string_view custom_source_name) {
  FieldSpec source =
      Option::Variants("source", "name", {}, "The source connector and stream.").Required();
  if (!custom_source_name.empty()) {
    // A custom Python source validates its own keys against its config class.
    source.variants.push_back({.tag = std::string(custom_source_name),
                               .description = "A custom Python source.",
                               .fields = CommonSourceFields(),
                               .unknown_keys = UnknownKeys::kAllow});
  }
  for (const SourceDescriptor* descriptor : registry.sources()) {
    if (descriptor->name == custom_source_name) continue;
    VariantSpec variant{.tag = descriptor->name,
                        .description = descriptor->description,
                        .unknown_keys = descriptor->config.unknown_keys};
    SourceVariantFields(*descriptor, variant);
    source.variants.push_back(std::move(variant));
  }
  return source;
}

/// `destination`: a variant per registered destination, tagged by its name.
FieldSpec DestinationField(const ConnectorRegistry& registry) {
  FieldSpec destination =
      Option::Variants("destination", "name", {}, "The destination connector.").Required();
  for (const DestinationDescriptor* descriptor : registry.destinations()) {
    std::vector<FieldSpec> config_fields = CommonDestinationFields();
    MergeFields(descriptor->config.fields, config_fields);
    destination.variants.push_back(
        {.tag = descriptor->name,
         .description = descriptor->description,
         .fields = {Option::String("name").Required(),
                    Option::String("alias",
                                   "The destination's system type in Datadog data-streams "
                                   "produce checkpoints (DD_DATA_STREAMS_ENABLED=true).")
                        .Default(descriptor->alias),
                    Option::Object("config", std::move(config_fields), "Destination settings.")
                        .Required()
                        .OnUnknownKeys(descriptor->config.unknown_keys)},
         .unknown_keys = UnknownKeys::kError});
  }
  return destination;
}

/// `streams`: the multi-stream routing of a stream pipeline.
FieldSpec StreamsField() {
  FieldSpec stream_source =
      Option::Object("source", {Option::String("name", ""), Option::String("topic", ""),
                                Option::String("endpoint", "")})
          .OnUnknownKeys(UnknownKeys::kAllow);
  FieldSpec stream_destination =
      Option::Object("destination", {Option::String("table_id").Required(),
                                     {.name = "record_schema", .type = FieldType::kList},
                                     Option::List("clustering_keys", Option::String(""), "")})
          .Required()
          .OnUnknownKeys(UnknownKeys::kAllow);
  return Option::List("streams",
                      Option::Object("", {Option::String("name").Required(),
                                          std::move(stream_source), std::move(stream_destination)}),
                      "Multi-stream routing (requires sync_mode: stream).");
}

}  // namespace

std::vector<FieldSpec> CommonSourceFields() {
  return {
      Option::String("name", "Connector name.").Required(),
      Option::String("stream", "Stream to sync.").Required(),
      Option::Enum("sync_mode", {"full_refresh", "incremental", "stream"},
                   "full_refresh (default), incremental or stream.")
          .Default("full_refresh"),
      Option::String("cursor_field", "Timestamp field the source filters incremental reads on."),
      AuthenticationField({"oauth", "api_key", "bearer", "basic", "cookies"}, false),
      Option::Boolean("force_ignore_checkpoint", "Ignore checkpoints and restart from iteration 0.")
          .Default(false),
      Option::Boolean("reset", "Re-fetch the whole stream and replace the destination table.")
          .Default(false)
          .Deprecated("it resets on every run until removed; use `bizon run --reset` or "
                      "`bizon stream reset` instead"),
      Option::Integer("max_iterations",
                      "Stop after this iteration index (0 or null: until exhausted).")
          .Minimum(0),
      Option::Object("api_config",
                     {Option::Integer("retry_limit", "Retries before giving up on an API call.")
                          .Default(100)
                          .Minimum(0)},
                     "API call settings.")
          .Default(Value(Value::Map{{"retry_limit", Value(10)}}))
          .OnUnknownKeys(UnknownKeys::kWarn),
      Option::String("source_file_path", "Custom Python source file (same as --custom-source)."),
      // hubspot declares it again with its default; the other sources accept it and ignore it,
      // as the original does.
      Option::Boolean("init_pipeline",
                      "Read by hubspot only (false skips reading the object's property list at "
                      "start-up; see its section)."),
      HttpField(),
  };
}

FieldSpec PipelineSpec(const PipelineDeclaration& declaration,
                       std::string_view custom_source_name) {
  FieldSpec transforms =
      Option::List(
          "transforms",
          Option::Object(
              "",
              {Option::String("label", "Name shown in errors.").Required(),
               Option::String("python", "Code run with the record bound to `data`.").Required()})
              .OnUnknownKeys(UnknownKeys::kWarn),
          "Python snippets applied in order to each record's `data`.")
          .Default(Value::EmptyList());

  FieldSpec secrets = Option::Object(
      "secrets",
      {Option::Object("gsm", {Option::String("project_id", "GCP project of gsm:// references.")})},
      "Defaults for reference providers.");

  return Option::Object(
      "",
      {Option::String("name", "Unique name of this sync.").Required(),
       Option::String("id", "Stable identity for backend state; defaults to name."),
       SourceField(declaration.registry, custom_source_name),
       DestinationField(declaration.registry), std::move(transforms), declaration.engine.field,
       std::move(secrets), declaration.monitoring.field, declaration.alerting.field,
       StreamsField()},
      "A bizon pipeline.");
}

void NormalizeForConnectors(const ConnectorRegistry& registry, Value& raw) {
  auto name_of = [&](std::string_view path) {
    const Value* name = raw.FindPath(path);
    return name != nullptr && name->is_string() ? name->AsString() : std::string();
  };
  if (const SourceDescriptor* source = registry.FindSource(name_of("source.name"));
      source != nullptr && source->normalize_config) {
    source->normalize_config(raw);
  }
  if (const DestinationDescriptor* destination =
          registry.FindDestination(name_of("destination.name"));
      destination != nullptr && destination->normalize_config) {
    destination->normalize_config(raw);
  }
}

namespace {

/// Reports each violation at `prefix` + its path: at its own mark, else at the line of the
/// nearest node of that path the file has.
void AddViolations(const std::vector<ConfigRuleViolation>& violations, std::string_view prefix,
                   const Value& raw, ValidationResult& result) {
  for (const ConfigRuleViolation& violation : violations) {
    std::string path = prefix.empty()           ? violation.path
                       : violation.path.empty() ? std::string(prefix)
                                                : fmt::format("{}.{}", prefix, violation.path);
    SourceMark mark = violation.mark;
    if (mark.line <= 0) {
      // Dotted lookups do not index lists: walk up to the nearest node the YAML has.
      std::string probe = path.substr(0, path.find('['));
      const Value* node = raw.FindPath(probe);
      while (node == nullptr && probe.find('.') != std::string::npos) {
        probe.resize(probe.rfind('.'));
        node = raw.FindPath(probe);
      }
      mark = node != nullptr ? node->mark() : SourceMark{};
    }
    AddDiagnostic(result, Diagnostic::Severity::kError, std::move(path), mark, violation.message);
  }
}

/// The destination's own rules across its options (check_config), each reported at the
/// option's line (or its nearest written parent's).
void CheckDestinationRules(const ConnectorRegistry& registry, const Value& raw,
                           ValidationResult& result) {
  const Value& config = result.normalized;
  const Value* name = config.FindPath("destination.name");
  const DestinationDescriptor* destination =
      registry.FindDestination(name != nullptr ? name->ToDisplayString() : "");
  const Value* options = config.FindPath("destination.config");
  if (destination == nullptr || !destination->check_config || options == nullptr) return;
  const Value* mode = config.FindPath("source.sync_mode");
  SyncMode sync_mode = ParseSyncMode(mode != nullptr ? mode->ToDisplayString() : "")
                           .value_or(SyncMode::kFullRefresh);
  AddViolations(destination->check_config(*options, sync_mode), "destination.config", raw, result);
}

/// Hands every destination id the config names to the destination's own check (file paths that
/// would leave the working directory, PostgreSQL names too long to stage...), so that
/// `config validate` refuses it, not the first write.
void CheckStaticDestinationIds(const ConnectorRegistry& registry, const Value& raw,
                               ValidationResult& result) {
  const Value& config = result.normalized;
  const DestinationDescriptor* destination =
      registry.FindDestination(config.FindPath("destination.name") != nullptr
                                   ? config.FindPath("destination.name")->ToDisplayString()
                                   : "");
  if (destination == nullptr || !destination->check_destination_id) return;
  const Value* mode = config.FindPath("source.sync_mode");
  SyncMode sync_mode = ParseSyncMode(mode != nullptr ? mode->ToDisplayString() : "")
                           .value_or(SyncMode::kFullRefresh);
  auto check = [&](const Value* id, const std::string& path, SourceMark mark) {
    if (id == nullptr || !id->is_string() || id->AsString().empty()) return false;
    if (Status checked = destination->check_destination_id(id->AsString(), sync_mode);
        !checked.ok()) {
      AddDiagnostic(result, Diagnostic::Severity::kError, path, mark, checked.message());
    }
    return true;
  };
  auto mark_of = [&](const std::string& path) {
    const Value* node = raw.FindPath(path);
    return node != nullptr ? node->mark() : SourceMark{};
  };
  bool named = false;
  std::vector<std::string> keys = destination->destination_id_keys;
  keys.insert(keys.begin(), "destination_id");
  for (const std::string& key : keys) {
    std::string path = "destination.config." + key;
    named |= check(config.FindPath(path), path, mark_of(path));
  }
  const Value* unnest = config.FindPath("destination.config.unnest");
  bool unnested = unnest != nullptr && unnest->is_bool() && unnest->AsBool();
  if (const Value* stream = config.FindPath("source.stream"); !named && !unnested && stream) {
    // The default id; with unnest the ids are the record_schemas ones, checked below.
    Value id(config.FindPath("source.name") != nullptr
                 ? config.FindPath("source.name")->ToDisplayString() + "_" +
                       stream->ToDisplayString()
                 : stream->ToDisplayString());
    check(&id, "source.stream", mark_of("source.stream"));
  }
  // Lists: each item's own mark, since the dotted path lookup does not index lists.
  auto check_list = [&](const Value* list, const std::string& list_path, std::string_view key) {
    if (list == nullptr || !list->is_list()) return;
    for (size_t i = 0; i < list->AsList().size(); ++i) {
      const Value& item = list->AsList()[i];
      check(item.FindPath(key), fmt::format("{}[{}].{}", list_path, i, key), item.mark());
    }
  };
  check_list(config.FindPath("destination.config.record_schemas"),
             "destination.config.record_schemas", "destination_id");
  check_list(config.Find("streams"), "streams", "destination.table_id");
  check_list(config.FindPath("source.topics"), "source.topics", "destination_id");
  check_list(config.FindPath("source.resources"), "source.resources", "destination_id");
}

/// A diagnostic at `path`, on the line of the node the file has there (if it has one).
void AddAtPath(const Value& raw, Diagnostic::Severity severity, std::string path,
               std::string message, ValidationResult& result) {
  const Value* node = raw.FindPath(path);
  SourceMark mark = node != nullptr ? node->mark() : SourceMark{};
  AddDiagnostic(result, severity, std::move(path), mark, std::move(message));
}

/// The streams block: stream names and tables each once, and only with sync_mode stream.
void CheckStreamsRouting(const Value& raw, const std::string& sync_mode, ValidationResult& result) {
  const Value* streams = result.normalized.Find("streams");
  if (streams == nullptr || !streams->is_list() || streams->AsList().empty()) return;
  std::set<std::string> names;
  std::set<std::string> tables;
  const auto& list = streams->AsList();
  for (size_t i = 0; i < list.size(); ++i) {
    std::string item_path = fmt::format("streams[{}]", i);
    std::string name = list[i].GetString("name");
    if (!names.insert(name).second) {
      AddDiagnostic(result, Diagnostic::Severity::kError, item_path + ".name", list[i].mark(),
                    fmt::format("duplicate stream name '{}'", name));
    }
    const Value* destination = list[i].Find("destination");
    std::string table = destination != nullptr ? destination->GetString("table_id") : "";
    if (!table.empty() && !tables.insert(table).second) {
      AddDiagnostic(result, Diagnostic::Severity::kError, item_path + ".destination.table_id",
                    destination->mark(), fmt::format("duplicate table_id '{}'", table));
    }
  }
  if (sync_mode != "stream") {
    AddAtPath(
        raw, Diagnostic::Severity::kError, "streams",
        fmt::format("the streams block requires source.sync_mode: stream, got '{}'", sync_mode),
        result);
  }
}

/// The stream the config names, for a built-in source: one the config itself declares (rest_api
/// endpoints) passes the source's check, and an incremental one supports incremental sync.
void CheckSourceStream(const SourceDescriptor& source, const std::string& source_name,
                       const std::string& sync_mode, const Value& raw, ValidationResult& result) {
  if (const Value* source_config = result.normalized.Find("source");
      source.check_stream && source_config != nullptr && source_config->is_map() &&
      !source_config->GetString("stream").empty()) {
    if (Status checked = source.check_stream(*source_config, source_config->GetString("stream"));
        !checked.ok()) {
      AddAtPath(raw, Diagnostic::Severity::kError, "source.stream", checked.message(), result);
    }
  }
  if (sync_mode != "incremental") return;
  std::string stream = raw.FindPath("source.stream") != nullptr
                           ? raw.FindPath("source.stream")->ToDisplayString()
                           : "";
  for (const StreamSpec& spec : source.streams) {
    if (spec.name == stream && !spec.supports_incremental) {
      AddAtPath(raw, Diagnostic::Severity::kWarning, "source.sync_mode",
                fmt::format("stream '{}' of source '{}' does not support incremental sync; "
                            "`bizon run` refuses it (the original would re-read everything on "
                            "its first run and fail on the second)",
                            stream, source_name),
                result);
    }
  }
}

/// unnest: true needs columns: record_schemas, or a record_schema in a streams entry.
void CheckUnnestSchemas(const Value& raw, ValidationResult& result) {
  const Value& config = result.normalized;
  const Value* unnest = config.FindPath("destination.config.unnest");
  const Value* schemas = config.FindPath("destination.config.record_schemas");
  bool has_streams_schemas = false;
  if (const Value* streams = config.Find("streams"); streams != nullptr && streams->is_list()) {
    for (const Value& stream : streams->AsList()) {
      if (stream.FindPath("destination.record_schema") != nullptr) has_streams_schemas = true;
    }
  }
  if (unnest != nullptr && unnest->is_bool() && unnest->AsBool() && !has_streams_schemas &&
      (schemas == nullptr || !schemas->is_list() || schemas->AsList().empty())) {
    AddAtPath(raw, Diagnostic::Severity::kError, "destination.config.unnest",
              "unnest: true needs at least one entry in destination.config.record_schemas", result);
  }
}

}  // namespace

void ExplainUnbuiltConnectors(const ConnectorRegistry& registry, const Value& raw,
                              ValidationResult& result) {
  for (std::string_view path : {"source.name", "destination.name"}) {
    const Value* name = raw.FindPath(path);
    if (name == nullptr || !name->is_string()) continue;
    std::string_view family = registry.UnbuiltFamily(name->AsString());
    if (family.empty()) continue;
    std::erase_if(result.diagnostics, [&](const Diagnostic& diagnostic) {
      return diagnostic.severity == Diagnostic::Severity::kError && diagnostic.yaml_path == path;
    });
    std::string kind(path.substr(0, path.find('.')));
    AddAtPath(raw, Diagnostic::Severity::kError, std::string(path),
              NotBuiltError(fmt::format("the '{}' {}", name->AsString(), kind), family).message(),
              result);
  }
}

void CheckPipelineRules(const PipelineDeclaration& declaration, const Value& raw,
                        ValidationResult& result) {
  const ConnectorRegistry& registry = declaration.registry;
  CheckStaticDestinationIds(registry, raw, result);
  CheckDestinationRules(registry, raw, result);
  const Value& config = result.normalized;

  std::string sync_mode = config.FindPath("source.sync_mode") != nullptr
                              ? config.FindPath("source.sync_mode")->ToDisplayString()
                              : "full_refresh";
  std::string source_name =
      raw.FindPath("source.name") != nullptr ? raw.FindPath("source.name")->ToDisplayString() : "";
  std::string destination_name = raw.FindPath("destination.name") != nullptr
                                     ? raw.FindPath("destination.name")->ToDisplayString()
                                     : "";

  CheckStreamsRouting(raw, sync_mode, result);

  // The connectors' own rules across the whole config.
  const SourceDescriptor* source = registry.FindSource(source_name);
  const DestinationDescriptor* destination = registry.FindDestination(destination_name);
  if (source != nullptr && source->check_pipeline) {
    AddViolations(source->check_pipeline(config), "", raw, result);
  }
  if (destination != nullptr && destination->check_pipeline) {
    AddViolations(destination->check_pipeline(config), "", raw, result);
  }

  // Incremental needs a source that can read a window; a reset needs a replacing destination.
  bool custom_source = config.FindPath("source.source_file_path") != nullptr &&
                       !config.FindPath("source.source_file_path")->is_null();
  if (source != nullptr && !custom_source) {
    CheckSourceStream(*source, source_name, sync_mode, raw, result);
  }
  const Value* reset = config.FindPath("source.reset");
  if (destination != nullptr && !destination->supports_reset && reset != nullptr &&
      reset->is_bool() && reset->AsBool() && sync_mode == "incremental") {
    AddAtPath(raw, Diagnostic::Severity::kError, "source.reset",
              fmt::format("source.reset is not supported by destination '{}', which appends to "
                          "its table instead of replacing it",
                          destination_name),
              result);
  }

  CheckUnnestSchemas(raw, result);

  // The sections' own rules, each on its block.
  for (const ConfigSection* section :
       {&declaration.engine, &declaration.monitoring, &declaration.alerting}) {
    const Value* block = config.Find(section->field.name);
    if (section->check && block != nullptr && !block->is_null()) {
      AddViolations(section->check(*block), section->field.name, raw, result);
    }
  }
}

}  // namespace bizon
