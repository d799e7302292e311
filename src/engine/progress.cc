#include "engine/progress.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "bizon/clock.h"
#include "monitoring/monitor.h"

namespace bizon {
namespace {

constexpr int64_t kTerminalRefreshUs = 250'000;
constexpr int64_t kLogIntervalUs = 10'000'000;

std::string Duration(double seconds) {
  int64_t total = std::llround(seconds);
  return fmt::format("{}:{:02}:{:02}", total / 3600, (total / 60) % 60, total % 60);
}

}  // namespace

Progress::Progress(std::string label, std::optional<int64_t> total, int64_t already_written)
    : label_(std::move(label)),
      total_(total),
      already_written_(already_written),
      started_us_(NowMicros()),
      tty_(isatty(STDERR_FILENO) == 1) {}

std::string Progress::Line(int64_t now_us) const {
  double elapsed = static_cast<double>(now_us - started_us_) / 1e6;
  double rate = elapsed > 0 ? static_cast<double>(written_) / elapsed : 0;
  int64_t done = already_written_ + written_;
  std::string line = fmt::format("{}: {} records, {:.0f} records/s", label_, done, rate);
  if (total_ && *total_ > 0) {
    line +=
        fmt::format(", {:.1f}%", 100.0 * static_cast<double>(done) / static_cast<double>(*total_));
    if (rate > 0 && done < *total_) {
      line += ", ETA " + Duration(static_cast<double>(*total_ - done) / rate);
    }
  }
  return line;
}

void Progress::Monitored(int64_t now_us) const {
  double elapsed = static_cast<double>(now_us - started_us_) / 1e6;
  CurrentMonitor().Progress(already_written_ + written_, total_,
                            elapsed > 0 ? static_cast<double>(written_) / elapsed : 0);
}

void Progress::Update(int64_t written_this_run) {
  written_ = written_this_run;
  int64_t now = NowMicros();
  Monitored(now);
  if (tty_) {
    if (now - last_print_us_ < kTerminalRefreshUs) return;
    std::fprintf(stderr, "\r\033[K%s", Line(now).c_str());
    std::fflush(stderr);
    drew_line_ = true;
  } else {
    if (now - last_print_us_ < kLogIntervalUs) return;
    spdlog::info("Progress: {}", Line(now));
  }
  last_print_us_ = now;
}

void Progress::Finish(bool success) {
  int64_t now = NowMicros();
  Monitored(now);
  if (drew_line_) std::fprintf(stderr, "\r\033[K");
  double elapsed = static_cast<double>(now - started_us_) / 1e6;
  spdlog::info("{} {}: wrote {} records in {:.2f} s ({:.0f} records/s)",
               success ? "Finished" : "Stopped", label_, written_, elapsed,
               elapsed > 0 ? static_cast<double>(written_) / elapsed : 0.0);
}

}  // namespace bizon
