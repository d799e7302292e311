// What travels from producer to consumer: one source iteration, or the end of the stream.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bizon/record_batch.h"
#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

struct QueueMessage {
  enum class Kind {
    kData,              // One source iteration.
    kTermination,       // The source is exhausted (or max_iterations reached): flush, finalize.
    kErrorTermination,  // The producer failed: write nothing more, publish nothing.
  };
  Kind kind = Kind::kData;
  int64_t iteration = 0;
  RecordBatch records;
  /// The pagination that fetches `iteration + 1`; empty when the source is exhausted.
  Value next_pagination = Value::EmptyMap();
  std::optional<Value> next_state;
  int64_t extracted_at_us = 0;
  /// kTermination: true when the source is exhausted, false when the run stopped at
  /// max_iterations with data left.
  bool source_exhausted = true;
  /// kErrorTermination: why the producer stopped; its failure class is the producer's result.
  Status error;

  size_t ByteSize() const { return records.ByteSize() + 64; }
};

/// Serialises a message for a byte channel (process runner, network queues), and back.
std::string EncodeMessage(const QueueMessage& message);
Result<QueueMessage> DecodeMessage(std::string_view bytes);

}  // namespace bizon
