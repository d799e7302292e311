#include "alerting/alerting_options.h"

namespace bizon {

ConfigSection AlertingSection() {
  return {.field = Option::Object(
                       "alerting",
                       {Option::Enum("type", {"slack"}).Required(),
                        Option::List("log_levels", Option::Enum("", {"DEBUG", "INFO", "WARNING",
                                                                     "ERROR", "CRITICAL"}))
                            .Default(Value(Value::List{"ERROR"})),
                        Option::Object("config",
                                       {Option::String("webhook_url", "Slack incoming webhook URL.")
                                            .Required()
                                            .Secret()})
                            .Required()
                            .OnUnknownKeys(UnknownKeys::kWarn)},
                       "Slack alerts.")
                       .OnUnknownKeys(UnknownKeys::kIgnore)};
}

}  // namespace bizon
