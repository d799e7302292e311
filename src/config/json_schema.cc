#include "config/json_schema.h"

namespace bizon {
namespace {

Value SchemaFor(const FieldSpec& spec);

Value ObjectSchema(const std::vector<FieldSpec>& fields, UnknownKeys unknown_keys,
                   const std::string& discriminator, const std::string& tag) {
  Value schema = Value::EmptyMap();
  schema.Set("type", "object");
  Value properties = Value::EmptyMap();
  Value::List required;
  for (const FieldSpec& field : fields) {
    Value property = SchemaFor(field);
    if (!discriminator.empty() && field.name == discriminator) {
      property = Value::EmptyMap();
      property.Set("const", tag);
    }
    properties.Set(field.name, std::move(property));
    if (field.required) required.emplace_back(field.name);
  }
  schema.Set("properties", std::move(properties));
  if (!required.empty()) schema.Set("required", Value(std::move(required)));
  // Warned-about keys stay valid for editors: only rejected keys are closed off.
  schema.Set("additionalProperties", unknown_keys != UnknownKeys::kError);
  return schema;
}

Value WithNull(Value schema, const FieldSpec& spec) {
  if (!spec.nullable || spec.required) return schema;
  Value any_of = Value::EmptyMap();
  Value null_type = Value::EmptyMap();
  null_type.Set("type", "null");
  any_of.Set("anyOf", Value(Value::List{std::move(schema), std::move(null_type)}));
  return any_of;
}

// An object with variants: one branch per variant, each requiring its discriminator value but
// the default variant's, which may leave the discriminator out.
Value VariantsSchema(const FieldSpec& spec) {
  Value::List branches;
  for (const VariantSpec& variant : spec.variants) {
    Value branch =
        ObjectSchema(variant.fields, variant.unknown_keys, spec.discriminator, variant.tag);
    if (!spec.default_variant.empty() && variant.tag == spec.default_variant) {
      Value::List required;
      if (const Value* list = branch.Find("required")) {
        for (const Value& name : list->AsList()) {
          if (name.AsString() != spec.discriminator) required.push_back(name);
        }
      }
      branch.Erase("required");
      if (!required.empty()) branch.Set("required", Value(std::move(required)));
    } else {
      Value::List required;
      if (const Value* list = branch.Find("required")) required = list->AsList();
      bool has_tag = false;
      for (const Value& name : required) has_tag |= name.AsString() == spec.discriminator;
      if (!has_tag) required.emplace_back(spec.discriminator);
      branch.Set("required", Value(std::move(required)));
    }
    if (!variant.description.empty()) branch.Set("description", variant.description);
    branches.push_back(std::move(branch));
  }
  Value schema = Value::EmptyMap();
  schema.Set("type", "object");
  schema.Set("oneOf", Value(std::move(branches)));
  return schema;
}

Value SchemaFor(const FieldSpec& spec) {
  Value schema = Value::EmptyMap();
  switch (spec.type) {
    case FieldType::kString:
      schema.Set("type", "string");
      break;
    case FieldType::kInteger:
      // Numeric strings are accepted for integers, as the original's models do.
      schema.Set("type", Value(Value::List{"integer", "string"}));
      break;
    case FieldType::kNumber:
      schema.Set("type", Value(Value::List{"number", "string"}));
      break;
    case FieldType::kBoolean:
      schema.Set("type", Value(Value::List{"boolean", "string", "integer"}));
      break;
    case FieldType::kEnum: {
      Value::List values;
      for (const std::string& value : spec.enum_values) values.emplace_back(value);
      schema.Set("enum", Value(std::move(values)));
      break;
    }
    case FieldType::kObject:
      schema = spec.variants.empty() ? ObjectSchema(spec.fields, spec.unknown_keys, "", "")
                                     : VariantsSchema(spec);
      break;
    case FieldType::kList:
      schema.Set("type", "array");
      if (!spec.items.empty()) schema.Set("items", SchemaFor(spec.items.front()));
      break;
    case FieldType::kMap:
      schema.Set("type", "object");
      if (!spec.items.empty()) {
        schema.Set("additionalProperties", SchemaFor(spec.items.front()));
      }
      break;
    case FieldType::kAny:
      if (!spec.one_of.empty()) {
        Value::List branches;
        for (const FieldSpec& alternative : spec.one_of) branches.push_back(SchemaFor(alternative));
        schema.Set("anyOf", Value(std::move(branches)));
      }
      break;
  }
  if (!spec.description.empty()) schema.Set("description", spec.description);
  if (spec.default_value && !spec.default_value->is_map()) {
    schema.Set("default", *spec.default_value);
  }
  if (spec.minimum) schema.Set("minimum", *spec.minimum);
  if (spec.maximum) schema.Set("maximum", *spec.maximum);
  if (!spec.deprecated.empty()) schema.Set("deprecated", true);
  if (spec.secret) schema.Set("writeOnly", true);
  return WithNull(std::move(schema), spec);
}

}  // namespace

Value ToJsonSchema(const FieldSpec& root) {
  Value schema = SchemaFor(root);
  schema.Set("$schema", "https://json-schema.org/draft/2020-12/schema");
  schema.Set("title", "bizon pipeline");
  return schema;
}

}  // namespace bizon
