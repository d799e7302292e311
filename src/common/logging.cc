#include "common/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>

#include "bizon/secret_mask.h"

namespace bizon {
namespace {

class RedactingStderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(message, formatted);
    std::string text =
        SecretMask::Global().Redact(std::string_view(formatted.data(), formatted.size()));
    std::fwrite(text.data(), 1, text.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

std::shared_ptr<spdlog::logger>& ProcessLogger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto created =
        std::make_shared<spdlog::logger>("bizon", std::make_shared<RedactingStderrSink>());
    created->set_pattern("%Y-%m-%d %H:%M:%S.%e | %-8l | %v");
    created->flush_on(spdlog::level::warn);
    return created;
  }();
  return logger;
}

/// The logger lets through what its most talkative sink wants.
void UpdateLoggerLevel(spdlog::logger& logger) {
  auto lowest = spdlog::level::off;
  for (const auto& sink : logger.sinks()) lowest = std::min(lowest, sink->level());
  logger.set_level(lowest);
}

}  // namespace

Status ConfigureLogging(std::string_view level) {
  std::string upper(level);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  spdlog::level::level_enum parsed;
  if (upper == "TRACE") {
    parsed = spdlog::level::trace;
  } else if (upper == "DEBUG") {
    parsed = spdlog::level::debug;
  } else if (upper == "INFO") {
    parsed = spdlog::level::info;
  } else if (upper == "WARNING" || upper == "WARN") {
    parsed = spdlog::level::warn;
  } else if (upper == "ERROR") {
    parsed = spdlog::level::err;
  } else if (upper == "CRITICAL") {
    parsed = spdlog::level::critical;
  } else {
    return InvalidArgumentError(
        "log level must be one of TRACE, DEBUG, INFO, WARNING, ERROR, CRITICAL, got '" + upper +
        "'");
  }
  std::shared_ptr<spdlog::logger>& logger = ProcessLogger();
  logger->sinks().front()->set_level(parsed);  // The stderr sink, always first.
  UpdateLoggerLevel(*logger);
  spdlog::set_default_logger(logger);
  return Status::Ok();
}

void AddLogSink(std::shared_ptr<spdlog::sinks::sink> sink) {
  std::shared_ptr<spdlog::logger>& logger = ProcessLogger();
  logger->sinks().push_back(std::move(sink));
  UpdateLoggerLevel(*logger);
}

void RemoveLogSink(const std::shared_ptr<spdlog::sinks::sink>& sink) {
  std::shared_ptr<spdlog::logger>& logger = ProcessLogger();
  std::erase(logger->sinks(), sink);
  UpdateLoggerLevel(*logger);
}

}  // namespace bizon
