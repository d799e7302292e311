// Progress reporting: a live line on a terminal, periodic log lines otherwise.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace bizon {

class Progress {
 public:
  /// `total` is the source's record count when it knows it (enables percent and ETA).
  Progress(std::string label, std::optional<int64_t> total, int64_t already_written);

  /// Records written so far in this run (not counting already_written).
  void Update(int64_t written_this_run);
  /// Final summary line.
  void Finish(bool success);

 private:
  std::string Line(int64_t now_us) const;
  /// Completion and ETA to the run's monitor.
  void Monitored(int64_t now_us) const;

  std::string label_;
  std::optional<int64_t> total_;
  int64_t already_written_;
  int64_t written_ = 0;
  int64_t started_us_;
  int64_t last_print_us_ = 0;
  bool tty_;
  bool drew_line_ = false;
};

}  // namespace bizon
