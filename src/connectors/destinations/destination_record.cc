#include "connectors/destinations/destination_record.h"

#include <fmt/format.h>

#include "bizon/clock.h"
#include "bizon/value.h"

namespace bizon {

void AppendRfc3339(std::string& out, int64_t micros) {
  UtcTime t = SplitUtc(micros);
  fmt::format_to(std::back_inserter(out), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", t.year, t.month,
                 t.day, t.hour, t.minute, t.second);
  if (t.microsecond != 0) fmt::format_to(std::back_inserter(out), ".{:06}", t.microsecond);
  out.append("+00:00");
}

void AppendDestinationRecord(std::string& out, const RecordBatch& batch, size_t i,
                             int64_t loaded_at_us) {
  out.append(R"({"bizon_id":")");
  out.append(NewUuidHex());
  out.append(R"(","bizon_extracted_at":")");
  AppendRfc3339(out, batch.extracted_at_us(i));
  out.append(R"(","bizon_loaded_at":")");
  AppendRfc3339(out, loaded_at_us);
  out.append(R"(","source_record_id":)");
  AppendJsonString(out, batch.id(i));
  out.append(R"(,"source_timestamp":")");
  AppendRfc3339(out, batch.timestamp_us(i));
  out.append(R"(","source_data":)");
  AppendJsonString(out, batch.payload(i));
  out.push_back('}');
}

}  // namespace bizon
