#include "config/yaml_loader.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

TEST(YamlLoaderTest, ResolvesScalarsAsYaml11) {
  auto value = ParseYaml(
      "a: yes\nb: off\nc: 12\nd: 1.5\ne: ~\nf: '12'\ng: hello\nh: 1_000\ni: \"true\"\n", "t.yml");
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(*value->Find("a"), Value(true));
  EXPECT_EQ(*value->Find("b"), Value(false));
  EXPECT_EQ(*value->Find("c"), Value(12));
  EXPECT_EQ(*value->Find("d"), Value(1.5));
  EXPECT_TRUE(value->Find("e")->is_null());
  EXPECT_EQ(*value->Find("f"), Value("12"));
  EXPECT_EQ(*value->Find("g"), Value("hello"));
  EXPECT_EQ(*value->Find("h"), Value(1000));
  EXPECT_EQ(*value->Find("i"), Value("true"));
}

TEST(YamlLoaderTest, RemembersLines) {
  auto value = ParseYaml("name: x\nsource:\n  stream: s\n  empty:\n", "t.yml");
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(value->FindPath("source.stream")->mark().line, 3);
  EXPECT_EQ(value->FindPath("source.empty")->mark().line, 4);
}

TEST(YamlLoaderTest, MalformedYamlGivesLineAndColumn) {
  auto value = ParseYaml("name: x\nsource: [unclosed\n", "t.yml");
  ASSERT_FALSE(value.has_value());
  EXPECT_NE(value.error().message().find("t.yml:3:1: malformed YAML"), std::string::npos)
      << value.error().message();
  EXPECT_EQ(value.error().failure_class(), FailureClass::kConfig);
}

TEST(YamlLoaderTest, EmptyFileIsAnError) {
  auto value = ParseYaml("# only a comment\n", "t.yml");
  ASSERT_FALSE(value.has_value());
  EXPECT_NE(value.error().message().find("t.yml: the file is empty"), std::string::npos);
}

TEST(YamlLoaderTest, TopLevelMustBeAMapping) {
  auto value = ParseYaml("- a\n- b\n", "t.yml");
  ASSERT_FALSE(value.has_value());
  EXPECT_NE(value.error().message().find("must be a mapping"), std::string::npos);
}

}  // namespace
}  // namespace bizon
