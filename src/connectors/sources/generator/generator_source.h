// The generator source: N synthetic records, for tests and benchmarks.
//
// Record i has id i and `updated_at = start + i * interval_ms`. A full read emits every record in
// order; an incremental read emits exactly the records whose updated_at falls in the run window
// (last_run, run_started_at], so consecutive incremental runs tile without gap or overlap.
#pragma once

#include "bizon/registry.h"
#include "bizon/source.h"

namespace bizon {

class GeneratorSource final : public Source {
 public:
  explicit GeneratorSource(const SourceContext& context);

  std::optional<int64_t> TotalRecordsCount() override { return count_; }
  Result<SourceIteration> Get(const Value& pagination) override;
  Result<SourceIteration> GetRecordsAfter(const IncrementalState& state,
                                          const Value& pagination) override;

  Status Init();

 private:
  /// Emits records [begin, end) of the whole range, starting at pagination's offset.
  Result<SourceIteration> Page(const Value& pagination, int64_t begin, int64_t end);
  int64_t UpdatedAt(int64_t index) const { return start_us_ + index * interval_us_; }

  // Read against the declaration in the constructor; Init() reports a misread (read_status_).
  int64_t count_ = 0;
  int64_t page_size_ = 1;
  int64_t payload_bytes_ = 0;
  int64_t key_count_ = 0;
  int64_t id_offset_ = 0;
  int64_t delete_every_ = 0;
  int64_t interval_us_ = 1;
  int64_t start_us_ = 0;
  int64_t fail_at_iteration_ = -1;
  int64_t iteration_ = 0;
  double sleep_seconds_ = 0;
  std::string start_text_;
  std::string padding_;
  Status read_status_;
};

}  // namespace bizon
