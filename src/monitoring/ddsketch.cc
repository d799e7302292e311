#include "monitoring/ddsketch.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>

namespace bizon {
namespace {

// The tracers' default mapping: relative accuracy 1/129, so gamma = (1 + a) / (1 - a) = 65/64,
// and the offset Datadog's backend uses for a smallest value of 1e-9.
constexpr double kRelativeAccuracy = 0.007751937984496124;
constexpr double kBackendMinValue = 1e-9;

double Multiplier() { return 1.0 / std::log(DDSketch::Gamma()); }

// Protocol buffers wire format, for the few field kinds the message uses.
void AppendVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void AppendTag(std::string& out, int field, int wire_type) {
  AppendVarint(out, static_cast<uint64_t>((field << 3) | wire_type));
}

void AppendFixed64(std::string& out, double value) {
  auto bits = std::bit_cast<uint64_t>(value);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void AppendDoubleField(std::string& out, int field, double value) {
  if (value == 0) return;  // proto3 leaves a default value out.
  AppendTag(out, field, 1);
  AppendFixed64(out, value);
}

void AppendMessageField(std::string& out, int field, const std::string& message) {
  AppendTag(out, field, 2);
  AppendVarint(out, message.size());
  out += message;
}

}  // namespace

double DDSketch::Gamma() { return (1.0 + kRelativeAccuracy) / (1.0 - kRelativeAccuracy); }

double DDSketch::IndexOffset() {
  return (1.0 - std::floor(std::log(kBackendMinValue) / std::log(Gamma()))) + 0.5;
}

double DDSketch::MinIndexableValue() {
  static const double kMin =
      std::max(std::numeric_limits<double>::min() * Gamma(),
               std::exp((static_cast<double>(std::numeric_limits<int32_t>::min()) - IndexOffset()) /
                            Multiplier() +
                        1.0));
  return kMin;
}

int32_t DDSketch::Index(double value) {
  double index = std::floor(std::log(value) * Multiplier() + IndexOffset());
  // Saturating, as the tracers' conversion is.
  if (index >= static_cast<double>(std::numeric_limits<int32_t>::max())) {
    return std::numeric_limits<int32_t>::max();
  }
  if (index <= static_cast<double>(std::numeric_limits<int32_t>::min())) {
    return std::numeric_limits<int32_t>::min();
  }
  return static_cast<int32_t>(index);
}

void DDSketch::Add(double value, double count) {
  if (!std::isfinite(value) || value < 0 || !std::isfinite(count)) return;
  if (value < MinIndexableValue()) {
    zero_count_ += count;
    return;
  }
  bins_[Slot(Index(value))] += count;
}

size_t DDSketch::Slot(int32_t index) {
  if (bins_.empty()) {
    offset_ = index;
    bins_.push_back(0);
    return 0;
  }
  auto size = static_cast<int64_t>(bins_.size());
  if (index < offset_) {
    // Below the stored range: grow downwards as far as the limit allows; a value further down
    // lands in the lowest bin.
    int64_t grow = std::min<int64_t>(int64_t{offset_} - index, kMaxBins - size);
    bins_.insert(bins_.begin(), static_cast<size_t>(grow), 0.0);
    offset_ -= static_cast<int32_t>(grow);
    return 0;
  }
  if (int64_t{offset_} + size > index) return static_cast<size_t>(index - offset_);
  int64_t span = int64_t{index} - offset_ + 1;
  if (span > kMaxBins) {
    // Collapse the lowest bins into the first one kept.
    int64_t collapse = span - kMaxBins;
    double collapsed = 0;
    for (int64_t i = 0; i < collapse && !bins_.empty(); ++i) {
      collapsed += bins_.front();
      bins_.pop_front();
    }
    if (bins_.empty()) {
      bins_.push_front(collapsed);
    } else {
      bins_.front() += collapsed;
    }
    offset_ += static_cast<int32_t>(collapse);
  }
  auto slot = static_cast<size_t>(index - offset_);
  if (bins_.size() <= slot) bins_.resize(slot + 1, 0.0);
  return slot;
}

double DDSketch::count() const { return std::accumulate(bins_.begin(), bins_.end(), zero_count_); }

std::string DDSketch::ToProto() const {
  std::string mapping;
  AppendDoubleField(mapping, 1, Gamma());
  AppendDoubleField(mapping, 2, IndexOffset());
  // interpolation (3) is NONE, the default.
  std::string positive;
  if (!bins_.empty()) {
    AppendTag(positive, 2, 2);  // contiguousBinCounts, packed.
    AppendVarint(positive, bins_.size() * 8);
    for (double bin : bins_) AppendFixed64(positive, bin);
  }
  if (offset_ != 0) {
    AppendTag(positive, 3, 0);  // contiguousBinIndexOffset, sint32 (zigzag).
    AppendVarint(positive,
                 (static_cast<uint32_t>(offset_) << 1) ^ static_cast<uint32_t>(offset_ >> 31));
  }
  std::string out;
  AppendMessageField(out, 1, mapping);
  AppendMessageField(out, 2, positive);
  AppendMessageField(out, 3, std::string());  // negativeValues: present and empty.
  AppendDoubleField(out, 4, zero_count_);
  return out;
}

}  // namespace bizon
