#include "bizon/record_batch.h"

#include <algorithm>

namespace bizon {

void RecordBatch::Add(std::string_view id, std::string_view json, int64_t timestamp_us,
                      std::string_view destination_id) {
  ids_.append(id);
  id_offsets_.push_back(ids_.size());
  payloads_.append(json);
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
  for (size_t i = begin; i < end; ++i) {
    Add(other.id(i), other.payload(i), other.timestamp_us(i), other.destination_id(i));
    extracted_at_us_.back() = other.extracted_at_us(i);
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
