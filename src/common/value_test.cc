#include "bizon/value.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

TEST(ValueTest, JsonRoundTrip) {
  std::string text = R"({"a":1,"b":[true,false,null],"c":"x\"y\n","d":1.5,"e":{}})";
  auto value = Value::FromJson(text);
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(value->ToJson(), text);
}

TEST(ValueTest, EscapesControlCharacters) {
  std::string out;
  AppendJsonString(out, std::string("a\x01"
                                    "b\tc",
                                    5));
  EXPECT_EQ(out, "\"a\\u0001b\\tc\"");
}

TEST(ValueTest, KeepsNonAsciiBytes) { EXPECT_EQ(Value("é").ToJson(), "\"é\""); }

TEST(ValueTest, InvalidJsonIsAnError) { EXPECT_FALSE(Value::FromJson("{\"a\":").has_value()); }

TEST(ValueTest, PathLookupAndSet) {
  Value root = Value::EmptyMap();
  root.GetOrCreateMap("engine").GetOrCreateMap("runner").Set("type", "stream");
  EXPECT_EQ(root.FindPath("engine.runner.type")->AsString(), "stream");
  EXPECT_EQ(root.FindPath("engine.missing.type"), nullptr);
  EXPECT_TRUE(root.Find("engine")->Erase("runner"));
  EXPECT_EQ(root.FindPath("engine.runner"), nullptr);
}

}  // namespace
}  // namespace bizon
