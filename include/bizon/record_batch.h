// RecordBatch: the unit that travels from producer to consumer.
//
// Columnar: ids and payloads live in two contiguous buffers with offsets, so a batch of a million
// records is a handful of allocations and its byte size is known without walking it. Payloads
// are raw JSON text, copied from the source's bytes; nothing parses them unless it must.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bizon {

class RecordBatch {
 public:
  RecordBatch() { id_offsets_.push_back(0), payload_offsets_.push_back(0); }

  /// Appends one record. `json` must be a JSON object; `timestamp_us` is microseconds since the
  /// Unix epoch, UTC. An empty `destination_id` means the pipeline's default destination.
  void Add(std::string_view id, std::string_view json, int64_t timestamp_us,
           std::string_view destination_id = {});

  /// For producers that serialise in place: append one record's JSON object text to
  /// OpenPayload() (truncating it back to its size on entry undoes a partial write), then call
  /// CommitPayload() with the rest of the record. Add() is the two in one.
  std::string& OpenPayload() { return payloads_; }
  void CommitPayload(std::string_view id, int64_t timestamp_us,
                     std::string_view destination_id = {});

  /// Appends records [begin, end) of `other`.
  void AppendRange(const RecordBatch& other, size_t begin, size_t end);

  size_t size() const { return timestamps_us_.size(); }
  bool empty() const { return timestamps_us_.empty(); }

  std::string_view id(size_t i) const {
    return std::string_view(ids_).substr(id_offsets_[i], id_offsets_[i + 1] - id_offsets_[i]);
  }
  std::string_view payload(size_t i) const {
    return std::string_view(payloads_).substr(payload_offsets_[i],
                                              payload_offsets_[i + 1] - payload_offsets_[i]);
  }
  int64_t timestamp_us(size_t i) const { return timestamps_us_[i]; }
  /// When the producer fetched the record's page (0 until SetExtractedAt()).
  int64_t extracted_at_us(size_t i) const { return extracted_at_us_[i]; }
  /// Stamps every record of the batch with the fetch time of its page.
  void SetExtractedAt(int64_t micros);
  std::string_view destination_id(size_t i) const {
    return has_destination_ids_ ? std::string_view(destination_ids_[i]) : std::string_view();
  }
  bool has_destination_ids() const { return has_destination_ids_; }

  /// Bytes held by the batch's buffers: what the queue bounds.
  size_t ByteSize() const;
  /// Bytes of payload text alone: what destination buffers count against `buffer_size`.
  size_t PayloadBytes() const { return payloads_.size(); }

  void Reserve(size_t records, size_t payload_bytes);
  void Clear();

  /// Direct buffer access for serialisation across processes.
  const std::string& id_buffer() const { return ids_; }
  const std::string& payload_buffer() const { return payloads_; }

 private:
  std::string ids_;
  std::vector<uint64_t> id_offsets_;
  std::string payloads_;
  std::vector<uint64_t> payload_offsets_;
  std::vector<int64_t> timestamps_us_;
  std::vector<int64_t> extracted_at_us_;
  std::vector<std::string> destination_ids_;  // Empty, or one per record.
  bool has_destination_ids_ = false;
};

}  // namespace bizon
