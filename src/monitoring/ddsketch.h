// DDSketch as Datadog's tracers build it for data-streams latencies and sizes: a logarithmic
// mapping with 1/129 relative accuracy (gamma 65/64) and the backend's index offset, positive
// values only, in a dense store of at most 2048 bins that collapses its lowest bins when a value
// needs more. Values below the smallest indexable one count as zero. Serialized as the DDSketch
// protobuf message (sketches-go's DDSketch.proto) in the encoding the tracers send.
//
// Not thread-safe; the data-streams aggregator holds it under its lock.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

namespace bizon {

class DDSketch {
 public:
  /// The mapping's constants (DDSketch.proto's IndexMapping gamma and indexOffset).
  static double Gamma();
  static double IndexOffset();
  /// The bin a value at least MinIndexableValue() falls in.
  static int32_t Index(double value);
  static double MinIndexableValue();
  static constexpr int32_t kMaxBins = 2048;

  /// Adds `count` occurrences of `value`; a negative, NaN or infinite value is ignored.
  void Add(double value, double count = 1);
  double count() const;
  double zero_count() const { return zero_count_; }
  /// Index of the first stored bin, and the stored bins from it on.
  int32_t offset() const { return offset_; }
  const std::deque<double>& bins() const { return bins_; }

  /// The serialized DDSketch message: mapping, the positive store (contiguous bins), an empty
  /// negative store, the zero count; default values left out as proto3 does.
  std::string ToProto() const;

 private:
  /// Where bin `index` is in bins_, growing the store (and collapsing its low end) as needed.
  size_t Slot(int32_t index);

  std::deque<double> bins_;
  int32_t offset_ = 0;
  double zero_count_ = 0;
};

}  // namespace bizon
