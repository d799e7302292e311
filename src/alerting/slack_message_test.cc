#include "alerting/slack_message.h"

#include <gtest/gtest.h>

#include "bizon/value.h"

namespace bizon {
namespace {

const AlertContext kContext{.sync_name = "boom",
                            .source_name = "dummy",
                            .source_stream = "creatures",
                            .destination_name = "file"};

AlertEntry Entry(AlertRecord record, int64_t count = 1, bool repeated = false) {
  return {.record = std::move(record), .count = count, .repeated = repeated};
}

TEST(SlackMessageTest, OneRecordInTheOriginalLayout) {
  std::string text = FormatSlackText(kContext, {Entry({.level = AlertLevel::kError,
                                                       .message = "Consumer stopped: no frogs",
                                                       .file = "src/engine/consumer.cc",
                                                       .line = 161,
                                                       .function = "Failed"})});
  EXPECT_EQ(text,
            ":rotating_light: *Bizon Pipeline Alert* :rotating_light:\n"
            "\n"
            "*Sync*: `boom`\n"
            "*Source*: `dummy` - `creatures`\n"
            "*Destination*: `file`\n"
            "\n"
            "*Message:*\n"
            "```Consumer stopped: no frogs```\n"
            "*File:* `src/engine/consumer.cc:161`\n"
            "*Function:* `Failed`\n"
            "*Level:* `ERROR`\n");
}

TEST(SlackMessageTest, MissingNamesAndPlaceShowNA) {
  std::string text = FormatSlackText({}, {Entry({.level = AlertLevel::kWarning, .message = "w"})});
  EXPECT_NE(text.find("*Sync*: `N/A`\n*Source*: `N/A` - `N/A`\n*Destination*: `N/A`\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("*File:* `N/A`\n*Function:* `N/A`\n*Level:* `WARNING`\n"), std::string::npos)
      << text;
}

TEST(SlackMessageTest, SeveralRecordsShareTheHeaderAndCountsAreShown) {
  std::string text = FormatSlackText(
      kContext, {Entry({.message = "first"}, 3), Entry({.message = "second"}, 7, true)},
      /*dropped=*/2);
  EXPECT_EQ(text.find(":rotating_light:"), 0u);
  EXPECT_EQ(text.find("*Sync*"), text.rfind("*Sync*"));
  EXPECT_LT(text.find("```first```"), text.find("```second```"));
  EXPECT_NE(text.find("*Repeated:* 3 times\n"), std::string::npos) << text;
  EXPECT_NE(text.find("*Repeated:* 7 more since the last alert like it\n"), std::string::npos);
  EXPECT_NE(text.find("_2 more alerts were dropped"), std::string::npos);
}

TEST(SlackMessageTest, EscapesSlackControlCharactersAndBackticks) {
  std::string text = FormatSlackText(
      {.sync_name = "a`b"}, {Entry({.message = "File \"<transform boom>\", x && y > z ```code```",
                                    .function = "<lambda>"})});
  EXPECT_NE(text.find("File \"&lt;transform boom&gt;\", x &amp;&amp; y &gt; z"), std::string::npos)
      << text;
  EXPECT_NE(text.find("*Function:* `&lt;lambda&gt;`"), std::string::npos);
  EXPECT_NE(text.find("*Sync*: `a'b`"), std::string::npos);
  // The message's own ``` cannot close the block early.
  std::string block = text.substr(text.find("```") + 3);
  block = block.substr(0, block.find("```\n"));
  EXPECT_EQ(block.find("```"), std::string::npos) << block;
}

TEST(SlackMessageTest, LongMessagesAreCutAndInvalidUtf8IsReplaced) {
  std::string long_message(kAlertMessageLimit + 100, 'x');
  std::string text = FormatSlackText(kContext, {Entry({.message = long_message})});
  EXPECT_NE(text.find("… (100 more bytes)"), std::string::npos);
  EXPECT_LT(text.size(), kAlertMessageLimit + 400);

  std::string broken = FormatSlackText(kContext, {Entry({.message = "caf\xc3 \xff é"})});
  EXPECT_NE(broken.find("caf\xef\xbf\xbd \xef\xbf\xbd é"), std::string::npos);
  // A multi-byte character is never split by the cut.
  std::string accents;
  while (accents.size() < kAlertMessageLimit + 10) accents += "é";
  std::string cut = FormatSlackText(kContext, {Entry({.message = accents})});
  auto parsed = Value::FromJson(SlackPayload(cut));
  ASSERT_TRUE(parsed) << parsed.error().message();
}

TEST(SlackMessageTest, PayloadIsTheTextField) {
  auto parsed = Value::FromJson(SlackPayload("line 1\n\"quoted\"\ttab"));
  ASSERT_TRUE(parsed);
  ASSERT_TRUE(parsed->is_map());
  EXPECT_EQ(parsed->AsMap().size(), 1u);
  EXPECT_EQ(parsed->GetString("text"), "line 1\n\"quoted\"\ttab");
}

}  // namespace
}  // namespace bizon
