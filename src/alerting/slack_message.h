// The text of a Slack alert, in the original bizon's layout, and the webhook's JSON payload.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "alerting/alert_buffer.h"

namespace bizon {

/// What the alert says the pipeline is; empty fields show as N/A.
struct AlertContext {
  std::string sync_name;
  std::string source_name;
  std::string source_stream;
  std::string destination_name;
};

/// Longest log message an alert quotes, in bytes; the rest is cut and counted.
inline constexpr size_t kAlertMessageLimit = 2500;

/// The header line, the sync / source / destination lines, then for each entry its message in a
/// code block with file, function and level (and how many identical records it stands for), as
/// Slack mrkdwn. `dropped` > 0 adds a closing line saying how many alerts were dropped. Values are
/// escaped for Slack (&, <, >), invalid UTF-8 is replaced, long messages are cut.
std::string FormatSlackText(const AlertContext& context, const std::vector<AlertEntry>& entries,
                            int64_t dropped = 0);

/// `{"text": ...}`, the incoming webhook's message payload.
std::string SlackPayload(const std::string& text);

}  // namespace bizon
