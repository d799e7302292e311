#include "alerting/slack_message.h"

#include <fmt/format.h>

#include "bizon/value.h"

namespace bizon {
namespace {

/// Length of the valid UTF-8 sequence starting at `i`, or 0 when it is not one.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  auto byte = [&](size_t at) { return static_cast<unsigned char>(text[at]); };
  unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length = lead >= 0xf0 && lead <= 0xf4 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc2 ? 2 : 0;
  if (lead > 0xf4 || length == 0 || i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  }
  unsigned char second = byte(i + 1);
  if ((lead == 0xe0 && second < 0xa0) || (lead == 0xed && second >= 0xa0) ||
      (lead == 0xf0 && second < 0x90) || (lead == 0xf4 && second >= 0x90)) {
    return 0;  // Overlong forms, surrogates, past U+10FFFF.
  }
  return length;
}

/// Slack's three control characters escaped, invalid UTF-8 replaced by U+FFFD, and at most
/// `limit` bytes of the input kept (the cut counted at the end).
std::string SlackEscape(std::string_view text, size_t limit = std::string_view::npos) {
  std::string out;
  size_t i = 0;
  while (i < text.size() && i < limit) {
    size_t length = Utf8SequenceLength(text, i);
    if (length == 0) {
      out.append("\xef\xbf\xbd");
      ++i;
      continue;
    }
    if (i + length > limit) break;
    char c = text[i];
    if (c == '&') {
      out.append("&amp;");
    } else if (c == '<') {
      out.append("&lt;");
    } else if (c == '>') {
      out.append("&gt;");
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  if (i < text.size()) out.append(fmt::format("… ({} more bytes)", text.size() - i));
  return out;
}

std::string InlineCode(std::string_view value) {
  if (value.empty()) return "`N/A`";
  std::string escaped = SlackEscape(value);
  // A backtick would end the inline code early.
  for (char& c : escaped) {
    if (c == '`') c = '\'';
  }
  return "`" + escaped + "`";
}

/// The message inside a ``` block: a ``` in it would close the block, so its backticks are split
/// by a zero-width space.
std::string CodeBlock(std::string_view message) {
  std::string escaped = SlackEscape(message, kAlertMessageLimit);
  std::string out;
  for (size_t i = 0; i < escaped.size(); ++i) {
    out.push_back(escaped[i]);
    if (escaped[i] == '`' && i + 1 < escaped.size() && escaped[i + 1] == '`') {
      out.append("\xe2\x80\x8b");
    }
  }
  return "```" + out + "```";
}

}  // namespace

std::string FormatSlackText(const AlertContext& context, const std::vector<AlertEntry>& entries,
                            int64_t dropped) {
  std::string text = fmt::format(
      ":rotating_light: *Bizon Pipeline Alert* :rotating_light:\n\n"
      "*Sync*: {}\n"
      "*Source*: {} - {}\n"
      "*Destination*: {}\n",
      InlineCode(context.sync_name), InlineCode(context.source_name),
      InlineCode(context.source_stream), InlineCode(context.destination_name));
  for (const AlertEntry& entry : entries) {
    const AlertRecord& record = entry.record;
    std::string place =
        record.file.empty() ? std::string() : fmt::format("{}:{}", record.file, record.line);
    text += fmt::format(
        "\n*Message:*\n{}\n"
        "*File:* {}\n"
        "*Function:* {}\n"
        "*Level:* {}\n",
        CodeBlock(record.message), InlineCode(place), InlineCode(record.function),
        InlineCode(ToString(record.level)));
    if (entry.repeated) {
      text += fmt::format("*Repeated:* {} more since the last alert like it\n", entry.count);
    } else if (entry.count > 1) {
      text += fmt::format("*Repeated:* {} times\n", entry.count);
    }
  }
  if (dropped > 0) {
    text += fmt::format("\n_{} more alert{} dropped: they came faster than they could be sent._\n",
                        dropped, dropped == 1 ? " was" : "s were");
  }
  return text;
}

std::string SlackPayload(const std::string& text) {
  Value::Map payload;
  payload.emplace_back("text", Value(text));
  return Value(std::move(payload)).ToJson();
}

}  // namespace bizon
