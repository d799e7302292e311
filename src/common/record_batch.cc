#include "bizon/record_batch.h"

#include <algorithm>

namespace bizon {

void RecordBatch::Add(std::string_view id, std::string_view json, int64_t timestamp_us,
                      std::string_view destination_id) {
  payloads_.append(json);
  CommitPayload(id, timestamp_us, destination_id);
}

void RecordBatch::CommitPayload(std::string_view id, int64_t timestamp_us,
                                std::string_view destination_id) {
  ids_.append(id);
  id_offsets_.push_back(ids_.size());
  payload_offsets_.push_back(payloads_.size());
  timestamps_us_.push_back(timestamp_us);
  extracted_at_us_.push_back(0);
  if (!destination_id.empty() && !has_destination_ids_) {
    // The first routed record: earlier records get the default (empty) destination id.
    destination_ids_.resize(timestamps_us_.size() - 1);
    has_destination_ids_ = true;
  }
  if (has_destination_ids_) destination_ids_.emplace_back(destination_id);
}

void RecordBatch::AppendRange(const RecordBatch& other, size_t begin, size_t end) {
  if (begin >= end) return;
  // One copy of each contiguous buffer, with the offsets shifted, rather than a record at a time.
  auto append_text = [](std::string& text, std::vector<uint64_t>& offsets,
                        const std::string& from_text, const std::vector<uint64_t>& from_offsets,
                        size_t first, size_t last) {
    uint64_t start = from_offsets[first];
    uint64_t shift = text.size() - start;
    text.append(from_text, start, from_offsets[last] - start);
    offsets.reserve(offsets.size() + (last - first));
    for (size_t i = first + 1; i <= last; ++i) offsets.push_back(from_offsets[i] + shift);
  };
  size_t before = size();
  append_text(ids_, id_offsets_, other.ids_, other.id_offsets_, begin, end);
  append_text(payloads_, payload_offsets_, other.payloads_, other.payload_offsets_, begin, end);
  timestamps_us_.insert(timestamps_us_.end(),
                        other.timestamps_us_.begin() + static_cast<std::ptrdiff_t>(begin),
                        other.timestamps_us_.begin() + static_cast<std::ptrdiff_t>(end));
  extracted_at_us_.insert(extracted_at_us_.end(),
                          other.extracted_at_us_.begin() + static_cast<std::ptrdiff_t>(begin),
                          other.extracted_at_us_.begin() + static_cast<std::ptrdiff_t>(end));
  if (other.has_destination_ids_ || has_destination_ids_) {
    destination_ids_.resize(before);
    for (size_t i = begin; i < end; ++i) destination_ids_.emplace_back(other.destination_id(i));
    has_destination_ids_ = true;
  }
}

void RecordBatch::SetExtractedAt(int64_t micros) {
  std::fill(extracted_at_us_.begin(), extracted_at_us_.end(), micros);
}

size_t RecordBatch::ByteSize() const {
  size_t bytes = ids_.size() + payloads_.size() +
                 (id_offsets_.size() + payload_offsets_.size()) * sizeof(uint64_t) +
                 (timestamps_us_.size() + extracted_at_us_.size()) * sizeof(int64_t);
  for (const std::string& destination : destination_ids_) bytes += destination.size() + 8;
  return bytes;
}

void RecordBatch::Reserve(size_t records, size_t payload_bytes) {
  ids_.reserve(records * 8);
  id_offsets_.reserve(records + 1);
  payloads_.reserve(payload_bytes);
  payload_offsets_.reserve(records + 1);
  timestamps_us_.reserve(records);
  extracted_at_us_.reserve(records);
}

void RecordBatch::Clear() {
  ids_.clear();
  id_offsets_.assign(1, 0);
  payloads_.clear();
  payload_offsets_.assign(1, 0);
  timestamps_us_.clear();
  extracted_at_us_.clear();
  destination_ids_.clear();
  has_destination_ids_ = false;
}

}  // namespace bizon
