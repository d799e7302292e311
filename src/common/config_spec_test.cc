#include "bizon/config_spec.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

TEST(OptionTest, BuildsTheFieldSpecItNames) {
  FieldSpec built = Option::Integer("max_workers", "Worker processes.").Default(2).Minimum(1);
  EXPECT_EQ(built.name, "max_workers");
  EXPECT_EQ(built.type, FieldType::kInteger);
  EXPECT_EQ(built.description, "Worker processes.");
  ASSERT_TRUE(built.default_value.has_value());
  EXPECT_EQ(*built.default_value, Value(2));
  EXPECT_EQ(built.minimum, 1.0);
  EXPECT_FALSE(built.maximum.has_value());
  EXPECT_FALSE(built.required);
  EXPECT_TRUE(built.nullable);

  FieldSpec secret = Option::String("password").Required().Secret().NotNull();
  EXPECT_TRUE(secret.required);
  EXPECT_TRUE(secret.secret);
  EXPECT_FALSE(secret.nullable);

  FieldSpec list = Option::List("ids", Option::Integer(""), "Ids.");
  EXPECT_EQ(list.type, FieldType::kList);
  ASSERT_EQ(list.items.size(), 1u);
  EXPECT_EQ(list.items.front().type, FieldType::kInteger);

  FieldSpec choice =
      Option::Variants("backend", "type", {{.tag = "a"}, {.tag = "b"}}).DefaultVariant("a");
  EXPECT_EQ(choice.type, FieldType::kObject);
  EXPECT_EQ(choice.discriminator, "type");
  EXPECT_EQ(choice.variants.size(), 2u);
  EXPECT_EQ(choice.default_variant, "a");
}

FieldSpec Declaration() {
  return Option::Object(
      "block",
      {Option::Integer("size").Default(10), Option::Number("ratio").Default(0.5),
       Option::Boolean("flag").Default(true), Option::String("name").Default("bizon"),
       Option::Integer("cap"), Option::Number("wait").NullIsValue().Default(120),
       Option::Object("nested", {Option::Integer("depth").Default(3)}).Default(Value::EmptyMap())});
}

TEST(OptionReaderTest, ReadsHeldValuesElseTheDeclaredDefaults) {
  OptionReader held(Declaration(), Value(Value::Map{{"size", Value(7)},
                                                    {"ratio", Value(2)},
                                                    {"flag", Value(false)},
                                                    {"name", Value("x")},
                                                    {"wait", Value()}}));
  EXPECT_EQ(held.Integer("size"), 7);
  EXPECT_EQ(held.Number("ratio"), 2.0);  // An integer is a number.
  EXPECT_FALSE(held.Boolean("flag"));
  EXPECT_EQ(held.String("name"), "x");
  ASSERT_NE(held.Find("wait"), nullptr);  // An explicit null that is a value of its own.
  EXPECT_TRUE(held.Find("wait")->is_null());
  EXPECT_EQ(held.Find("cap"), nullptr);  // Unset, and no default: not an error.
  EXPECT_TRUE(held.status().ok()) << held.status().message();

  OptionReader absent(Declaration(), Value());
  EXPECT_EQ(absent.Integer("size"), 10);
  EXPECT_EQ(absent.Number("ratio"), 0.5);
  EXPECT_TRUE(absent.Boolean("flag"));
  EXPECT_EQ(absent.String("name"), "bizon");
  EXPECT_EQ(absent.Number("wait"), 120.0);
  EXPECT_EQ(absent.Object("nested").Integer("depth"), 3);
  EXPECT_TRUE(absent.status().ok()) << absent.status().message();
}

TEST(OptionReaderTest, ANullWithoutItsOwnMeaningTakesTheDefault) {
  OptionReader reader(Declaration(), Value(Value::Map{{"size", Value()}}));
  EXPECT_EQ(reader.Integer("size"), 10);
  EXPECT_TRUE(reader.status().ok());
}

TEST(OptionReaderTest, ReadsTheVariantTheDiscriminatorSelects) {
  FieldSpec queue =
      Option::Variants(
          "queue", "type",
          {{.tag = "memory",
            .fields = {Option::String("type"), Option::Integer("records").Default(100)}},
           {.tag = "broker",
            .fields = {Option::String("type"), Option::String("topic").Default("bizon")}}})
          .DefaultVariant("memory");
  OptionReader by_default(queue, Value::EmptyMap());
  EXPECT_EQ(by_default.Variant(), "memory");
  EXPECT_EQ(by_default.Integer("records"), 100);
  OptionReader broker(queue, Value(Value::Map{{"type", Value("broker")}}));
  EXPECT_EQ(broker.Variant(), "broker");
  EXPECT_EQ(broker.String("topic"), "bizon");
  EXPECT_TRUE(broker.status().ok());
  broker.Integer("records");  // Declared by the other variant only.
  EXPECT_EQ(broker.status().code(), StatusCode::kInternal);
}

TEST(OptionReaderTest, AMisuseIsReportedOnceWithTheOptionsPath) {
  OptionReader undeclared(Declaration(), Value::EmptyMap());
  EXPECT_EQ(undeclared.Object("nested").Integer("height"), 0);
  EXPECT_EQ(undeclared.Integer("size"), 10);
  EXPECT_EQ(undeclared.status().code(), StatusCode::kInternal);
  EXPECT_EQ(undeclared.status().message(), "option nested.height: read but not declared");

  OptionReader unset(Declaration(), Value::EmptyMap());
  EXPECT_EQ(unset.Integer("cap"), 0);
  EXPECT_EQ(unset.status().message(), "option cap: has no value and no default");

  OptionReader mistyped(Declaration(), Value(Value::Map{{"size", Value("ten")}}));
  EXPECT_EQ(mistyped.Integer("size"), 0);
  EXPECT_EQ(mistyped.status().message(), "option size: holds a value of type string");
}

TEST(AuthenticationFieldTest, DeclaresOneVariantPerTypeWithItsParams) {
  FieldSpec field = AuthenticationField({"api_key", "basic"}, /*required=*/true);
  EXPECT_EQ(field.name, "authentication");
  EXPECT_TRUE(field.required);
  EXPECT_EQ(field.discriminator, "type");
  ASSERT_EQ(field.variants.size(), 2u);
  EXPECT_EQ(field.variants[0].tag, "api_key");
  // type, params and the api_key shorthand.
  ASSERT_EQ(field.variants[0].fields.size(), 3u);
  const FieldSpec& params = field.variants[0].fields[1];
  EXPECT_EQ(params.name, "params");
  ASSERT_FALSE(params.fields.empty());
  EXPECT_EQ(params.fields[0].name, "token");
  EXPECT_TRUE(params.fields[0].secret);
  EXPECT_EQ(field.variants[1].tag, "basic");
  EXPECT_EQ(field.variants[1].fields.size(), 2u);
}

}  // namespace
}  // namespace bizon
