#include "config/yaml_loader.h"

#include <gtest/gtest.h>

#include <string>

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

// "Billion laughs": each anchor holds nine aliases of the previous one, so twelve levels name
// 9^12 nodes in about a kilobyte of text.
std::string AliasBomb(int levels) {
  std::string text = "name: bomb\na0: &a0 [lol]\n";
  for (int level = 1; level < levels; ++level) {
    text += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int use = 0; use < 9; ++use) {
      text += (use == 0 ? "*a" : ", *a") + std::to_string(level - 1);
    }
    text += "]\n";
  }
  text += "source:\n  name: dummy\n  extra: *a" + std::to_string(levels - 1) + "\n";
  return text;
}

TEST(YamlLoaderTest, AliasBombIsRefusedAtTheAliasThatPassesTheBound) {
  auto value = ParseYaml(AliasBomb(12), "bomb.yml");
  ASSERT_FALSE(value.has_value());
  const std::string& message = value.error().message();
  // Anchors a0..a4 hold 2, 19, 172, 1549 and 13942 nodes; the seventh *a4 inside a5 (line 7)
  // takes the document past the bound.
  EXPECT_NE(message.find("bomb.yml:7: the alias *a4 expands the document past 100000 nodes"),
            std::string::npos)
      << message;
  EXPECT_EQ(value.error().failure_class(), FailureClass::kConfig);
}

TEST(YamlLoaderTest, AnchorsWithinTheBoundStillLoad) {
  auto value =
      ParseYaml(AliasBomb(4) + "defaults: &defaults {a: 1, b: 2}\nuse: *defaults\n", "ok.yml");
  ASSERT_TRUE(value.has_value()) << value.error().message();
  EXPECT_EQ(value->FindPath("source.extra")->AsList().size(), 9u);
  EXPECT_EQ(*value->FindPath("use.a"), Value(1));
}

TEST(YamlLoaderTest, NestingDeeperThanTheBoundIsRefused) {
  std::string text = "name: deep\nx: " + std::string(100, '[') + std::string(100, ']') + "\n";
  auto value = ParseYaml(text, "deep.yml");
  ASSERT_FALSE(value.has_value());
  EXPECT_NE(value.error().message().find("deep.yml:2: nesting deeper than 64 levels"),
            std::string::npos)
      << value.error().message();
}

// Found by fuzz/fuzz_yaml_config: an alias inside its own anchor is a cycle, which the
// conversion to Value followed until the stack overflowed.
TEST(YamlLoaderTest, AliasInsideItsOwnAnchorIsRefused) {
  for (std::string text : {std::string("defaults: &auth\n  type: a\n  again: *auth\n"),
                           std::string("list: &items [1, [2, *items]]\n")}) {
    auto value = ParseYaml(text, "cycle.yml");
    ASSERT_FALSE(value.has_value()) << text;
    EXPECT_NE(value.error().message().find("cycle.yml:"), std::string::npos);
    EXPECT_NE(value.error().message().find("is inside the anchor it names"), std::string::npos)
        << value.error().message();
  }
}

TEST(YamlLoaderTest, DeepAliasIsRefusedNamingIt) {
  std::string inner = std::string(40, '[') + "x" + std::string(40, ']');
  std::string text = "name: deep\na: &deep " + inner + "\nb: " + std::string(30, '[') + "*deep" +
                     std::string(30, ']') + "\n";
  auto value = ParseYaml(text, "deep.yml");
  ASSERT_FALSE(value.has_value());
  EXPECT_NE(value.error().message().find("deep.yml:3: the alias *deep nests deeper than 64"),
            std::string::npos)
      << value.error().message();
}

}  // namespace
}  // namespace bizon
