// The dummy source: a fixed, three-page fake API with streams `creatures` and `plants`. It is the
// reference source: a new connector starts as a copy of this folder.
#pragma once

#include <memory>

#include "bizon/registry.h"
#include "bizon/source.h"

namespace bizon {

class DummySource final : public Source {
 public:
  /// Reads the source's options (`sleep`) against their declaration; a misread option is an
  /// internal error naming it.
  static Result<std::unique_ptr<DummySource>> Create(const SourceContext& context);

  std::optional<int64_t> TotalRecordsCount() override { return 5; }
  Result<SourceIteration> Get(const Value& pagination) override;

 private:
  DummySource(const SourceContext& context, int64_t sleep_seconds);

  std::string stream_;
  SyncMode sync_mode_;
  int64_t sleep_seconds_;
};

}  // namespace bizon
