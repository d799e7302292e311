#include "engine/engine_options.h"

#include "engine/backend/backend_options.h"
#include "engine/queue/queue_options.h"

namespace bizon {

ConfigSection EngineSection() {
  return {.field = Option::Object("engine", {BackendField(), QueueField(), RunnerField()},
                                  "Backend, queue and runner.")
                       .Default(Value::EmptyMap())};
}

FieldSpec RunnerField() {
  std::vector<FieldSpec> config = {
      Option::Integer("max_workers", "Worker processes for transforms (process runner).")
          .Default(2)
          .Minimum(1),
      Option::Number("python_timeout",
                     "Seconds one call into a custom Python source, or the transforms of one "
                     "record, may run before the run fails; 0: no limit.")
          .Default(300)
          .Minimum(0),
      Option::String("python_env",
                     "Virtualenv (made with /usr/bin/python3 -m venv) whose packages custom "
                     "sources and transforms import ahead of bizon's own; empty: the active one "
                     "($VIRTUAL_ENV), if any.")
          .Default(""),
      Option::Number("consumer_start_delay", "Kept for compatibility.")
          .Default(2)
          .NoEffect("the consumer starts at once"),
      Option::Number("is_alive_check_interval", "Kept for compatibility.")
          .Default(2)
          .NoEffect("a failing producer or consumer stops the run at once, without polling"),
  };
  return Option::Object(
             "runner",
             {Option::Enum("type", {"thread", "process", "stream"},
                           "thread (default), process (separate processes) or stream (inline).")
                  .Default("thread"),
              Option::Object("config", std::move(config))
                  .Default(Value::EmptyMap())
                  .OnUnknownKeys(UnknownKeys::kIgnore),
              Option::Enum("log_level", {"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"},
                           "Log verbosity.")
                  .Default("INFO")},
             "How producer and consumer execute.")
      .Default(Value::EmptyMap())
      .OnUnknownKeys(UnknownKeys::kIgnore);
}

Result<RunnerOptions> ReadRunnerOptions(const Value& runner) {
  OptionReader config = OptionReader(RunnerField(), runner).Object("config");
  RunnerOptions options;
  options.max_workers = static_cast<int>(config.Integer("max_workers"));
  options.python_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config.Number("python_timeout") * 1000));
  options.python_env = config.String("python_env");
  BIZON_RETURN_IF_ERROR(config.status());
  return options;
}

}  // namespace bizon
