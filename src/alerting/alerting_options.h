// The `alerting:` block of a pipeline file, declared beside its reader (StartRunAlerting in
// slack_alerter.h).
#pragma once

#include "bizon/config_spec.h"

namespace bizon {

/// `alerting:` for the config loader: Slack alerts at the listed log levels.
ConfigSection AlertingSection();

}  // namespace bizon
