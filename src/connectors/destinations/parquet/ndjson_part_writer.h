// NdjsonPartWriter: a table's rows as JSON lines, the object-store destinations' `format: json`.
// Each line is the destination record (rendered as the file destination renders it), or with
// unnest exactly the keys of the `record_schemas` entry, in its order. Rows are held in memory
// until WritePart().
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "connectors/destinations/destination_record.h"
#include "connectors/destinations/parquet/part_writer.h"

namespace bizon {

/// Appends the object of the keys `columns` of `payload` (a JSON object holding exactly them), in
/// that order, minified. kInvalidArgument naming `record_id` otherwise.
Status AppendUnnestedJson(std::string& out, const std::vector<std::string>& columns,
                          std::string_view payload, std::string_view record_id);

class NdjsonPartWriter final : public PartWriter {
 public:
  /// `columns`: nullopt for the destination record, else the unnest columns' names.
  explicit NdjsonPartWriter(std::optional<std::vector<std::string>> columns)
      : columns_(std::move(columns)) {}

  Status AppendRecord(const RecordBatch& batch, size_t i, int64_t loaded_at_us) override;
  Status AppendUnnested(std::string_view payload, std::string_view record_id) override;
  int64_t rows() const override { return rows_; }
  int64_t bytes() const override { return static_cast<int64_t>(lines_.size()); }
  Status WritePart(const std::string& path) override;
  Status Discard() override;
  std::string_view extension() const override { return ".json"; }

 private:
  std::optional<std::vector<std::string>> columns_;
  DestinationRecordWriter writer_;
  std::string lines_;
  int64_t rows_ = 0;
};

}  // namespace bizon
