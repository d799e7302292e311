#include "config/reference_docs.h"

#include <fmt/format.h>

#include "config/pipeline_spec.h"

namespace bizon {
namespace {

std::string TypeText(const FieldSpec& field) {
  switch (field.type) {
    case FieldType::kString:
      return "string";
    case FieldType::kInteger:
      return "integer";
    case FieldType::kNumber:
      return "number";
    case FieldType::kBoolean:
      return "boolean";
    case FieldType::kEnum: {
      std::string values;
      for (const std::string& value : field.enum_values) {
        values += (values.empty() ? "" : " \\| ") + ("`" + value + "`");
      }
      return values;
    }
    case FieldType::kObject:
      return "mapping";
    case FieldType::kList:
      return "list";
    case FieldType::kMap:
      return "mapping";
    case FieldType::kAny:
      return "see description";
  }
  return "";
}

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

void Rows(std::string& out, const std::vector<FieldSpec>& fields, const std::string& prefix) {
  for (const FieldSpec& field : fields) {
    std::string name = prefix + field.name;
    std::string default_text;
    if (field.default_value && !field.default_value->is_map()) {
      default_text = fmt::format("`{}`", field.default_value->ToJson());
    }
    std::string notes = field.description;
    if (field.required) notes.insert(0, "**required.** ");
    if (field.secret) notes += " Secret: masked in output.";
    if (!field.deprecated.empty()) notes += " Deprecated: " + field.deprecated + ".";
    if (!field.no_effect.empty()) notes += " No effect: " + field.no_effect + ".";
    out += fmt::format("| `{}` | {} | {} | {} |\n", name, TypeText(field), Escape(default_text),
                       Escape(notes));
    if (field.type == FieldType::kObject && field.variants.empty()) {
      Rows(out, field.fields, name + ".");
    }
    if (field.type == FieldType::kList && !field.items.empty() &&
        field.items.front().type == FieldType::kObject) {
      Rows(out, field.items.front().fields, name + "[].");
    }
  }
}

void Table(std::string& out, const std::vector<FieldSpec>& fields, const std::string& prefix) {
  out += "| key | type | default | description |\n|---|---|---|---|\n";
  Rows(out, fields, prefix);
  out += "\n";
}

void Variants(std::string& out, const FieldSpec& field, const std::string& prefix,
              const std::string& heading) {
  for (const VariantSpec& variant : field.variants) {
    out += fmt::format("{} `{}: {}`\n\n{}\n\n", heading, field.discriminator, variant.tag,
                       variant.description);
    Table(out, variant.fields, prefix);
  }
}

}  // namespace

std::string RenderConfigReference(const PipelineDeclaration& declaration) {
  const ConnectorRegistry& registry = declaration.registry;
  FieldSpec root = PipelineSpec(declaration);
  std::string out =
      "# Pipeline configuration reference\n\n"
      "Generated from the declarations in the code by `bizon config docs`; do not edit by "
      "hand. `bizon config schema` prints the same as JSON Schema.\n\n## Top level\n\n";
  std::vector<FieldSpec> top;
  for (const FieldSpec& field : root.fields) {
    FieldSpec shallow = field;
    shallow.fields.clear();
    shallow.items.clear();
    top.push_back(shallow);
  }
  Table(out, top, "");
  for (const FieldSpec& field : root.fields) {
    if (field.name == "source") {
      out += "## Sources\n\nKeys common to every source:\n\n";
      Table(out, CommonSourceFields(), "source.");
      for (const SourceDescriptor* source : registry.sources()) {
        out +=
            fmt::format("### Source `{}`\n\n{}{}\n\nStreams: ", source->name, source->description,
                        source->factory ? "" : " *Declared; not implemented yet.*");
        for (size_t i = 0; i < source->streams.size(); ++i) {
          out += fmt::format("{}`{}`{}", i == 0 ? "" : ", ", source->streams[i].name,
                             source->streams[i].supports_incremental ? " (incremental)" : "");
        }
        out += "\n\n";
        if (!source->config.fields.empty()) Table(out, source->config.fields, "source.");
      }
    } else if (field.name == "destination") {
      out += "## Destinations\n\nKeys common to every destination, under `destination.config`:\n\n";
      Table(out, CommonDestinationFields(), "destination.config.");
      for (const DestinationDescriptor* destination : registry.destinations()) {
        out += fmt::format("### Destination `{}`\n\n{}{}\n\n", destination->name,
                           destination->description,
                           destination->factory ? "" : " *Declared; not implemented yet.*");
        if (!destination->config.fields.empty()) {
          Table(out, destination->config.fields, "destination.config.");
        }
      }
    } else if (field.name == "engine") {
      out += "## Engine\n\n";
      for (const FieldSpec& part : field.fields) {
        if (!part.variants.empty()) {
          Variants(out, part, "engine." + part.name + ".", "### engine." + part.name);
        } else {
          out += fmt::format("### engine.{}\n\n", part.name);
          Table(out, part.fields, "engine." + part.name + ".");
        }
      }
    } else if (field.type == FieldType::kObject || field.type == FieldType::kList) {
      const std::vector<FieldSpec>& children =
          field.type == FieldType::kList && !field.items.empty() ? field.items.front().fields
                                                                 : field.fields;
      if (children.empty()) continue;
      out += fmt::format("## {}\n\n{}\n\n", field.name, field.description);
      Table(out, children, field.name + (field.type == FieldType::kList ? "[]." : "."));
    }
  }
  return out;
}

}  // namespace bizon
