#include "connectors/sources/generator/generator_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "bizon/clock.h"
#include "connectors/registration.h"

namespace bizon {

namespace {

/// The generator's options, declared once: the registry's spec and the reader both use it.
std::vector<FieldSpec> GeneratorFields() {
  return {{.name = "count",
           .type = FieldType::kInteger,
           .description = "How many records the stream holds.",
           .default_value = Value(1000),
           .minimum = 0},
          {.name = "page_size",
           .type = FieldType::kInteger,
           .description = "Records per iteration.",
           .default_value = Value(1000),
           .minimum = 1},
          {.name = "payload_bytes",
           .type = FieldType::kInteger,
           .description = "Extra padding characters in each record.",
           .default_value = Value(0),
           .minimum = 0},
          {.name = "key_count",
           .type = FieldType::kInteger,
           .description = "Distinct ids: record i has id i % key_count, so "
                          "records past the first key_count update earlier "
                          "ones (0: every id distinct).",
           .default_value = Value(0),
           .minimum = 0},
          {.name = "id_offset",
           .type = FieldType::kInteger,
           .description = "Added to every id (after key_count), so that two "
                          "runs can share some ids and not others.",
           .default_value = Value(0),
           .minimum = 0},
          {.name = "delete_every",
           .type = FieldType::kInteger,
           .description = "Adds a boolean `deleted` to every record, true for "
                          "the updates whose index is a multiple of this (0: "
                          "no `deleted` field).",
           .default_value = Value(0),
           .minimum = 0},
          {.name = "start",
           .type = FieldType::kString,
           .description = "updated_at of record 0 (UTC).",
           .default_value = Value("2024-01-01T00:00:00Z")},
          {.name = "interval_ms",
           .type = FieldType::kNumber,
           .description = "Milliseconds between consecutive updated_at values "
                          "(fractions down to a microsecond).",
           .default_value = Value(1),
           .minimum = 0.001},
          {.name = "sleep",
           .type = FieldType::kNumber,
           .description = "Seconds to wait before each page.",
           .default_value = Value(0),
           .minimum = 0},
          {.name = "fail_at_iteration",
           .type = FieldType::kInteger,
           .description = "Fail the fetch of this iteration (tests).",
           .default_value = Value(-1)}};
}

}  // namespace

GeneratorSource::GeneratorSource(const SourceContext& context) {
  // Each option is read against its declaration, which holds its default.
  OptionReader options(Option::Object("source", GeneratorFields()), context.config);
  count_ = options.Integer("count");
  page_size_ = options.Integer("page_size");
  payload_bytes_ = options.Integer("payload_bytes");
  key_count_ = options.Integer("key_count");
  id_offset_ = options.Integer("id_offset");
  delete_every_ = options.Integer("delete_every");
  // Whole microseconds, the resolution of every timestamp bizon keeps.
  interval_us_ = std::max<int64_t>(1, std::llround(options.Number("interval_ms") * 1000));
  fail_at_iteration_ = options.Integer("fail_at_iteration");
  sleep_seconds_ = options.Number("sleep");
  start_text_ = options.String("start");
  read_status_ = options.status();
}

Status GeneratorSource::Init() {
  BIZON_RETURN_IF_ERROR(read_status_);
  BIZON_ASSIGN_OR_RETURN(start_us_, ParseTimestamp(start_text_));
  padding_.assign(static_cast<size_t>(payload_bytes_), 'x');
  return Status::Ok();
}

Result<SourceIteration> GeneratorSource::Page(const Value& pagination, int64_t begin, int64_t end) {
  if (fail_at_iteration_ >= 0 && iteration_ == fail_at_iteration_) {
    return Fail(UnavailableError(
        fmt::format("generator asked to fail at iteration {}", fail_at_iteration_)));
  }
  ++iteration_;
  if (sleep_seconds_ > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(sleep_seconds_));
  }
  int64_t offset = std::max(begin, pagination.GetInteger("offset", begin));
  int64_t stop = std::min(end, offset + page_size_);
  SourceIteration iteration;
  iteration.records.Reserve(
      static_cast<size_t>(std::max<int64_t>(0, stop - offset)),
      static_cast<size_t>(std::max<int64_t>(0, stop - offset)) * (90 + padding_.size()));
  int64_t now = NowMicros();
  std::string json;
  for (int64_t i = offset; i < stop; ++i) {
    json.clear();
    // With key_count, record i changes the row of key i % key_count: the records past the
    // first key_count are updates (and, with delete_every, some of them deletes).
    int64_t key = (key_count_ > 0 ? i % key_count_ : i) + id_offset_;
    fmt::format_to(std::back_inserter(json),
                   R"({{"id":{},"name":"record-{}","updated_at":"{}","value":{})", key, i,
                   FormatIsoTimestamp(UpdatedAt(i)), (i * 7919) % 1000);
    if (delete_every_ > 0) {
      bool deleted = i >= key_count_ && i % delete_every_ == 0;
      json.append(deleted ? R"(,"deleted":true)" : R"(,"deleted":false)");
    }
    if (!padding_.empty()) fmt::format_to(std::back_inserter(json), R"(,"padding":"{}")", padding_);
    json.push_back('}');
    iteration.records.Add(std::to_string(i), json, now);
  }
  if (stop < end) iteration.next_pagination = Value(Value::Map{{"offset", Value(stop)}});
  iteration.next_state = Value(Value::Map{{"max_id", Value(stop - 1)}});
  return iteration;
}

Result<SourceIteration> GeneratorSource::Get(const Value& pagination) {
  return Page(pagination, 0, count_);
}

Result<SourceIteration> GeneratorSource::GetRecordsAfter(const IncrementalState& state,
                                                         const Value& pagination) {
  // First index strictly after last_run, and one past the last index at or before run_started_at.
  auto first_after = [&](int64_t micros) {
    if (micros < start_us_) return int64_t{0};
    return std::min(count_, (micros - start_us_) / interval_us_ + 1);
  };
  int64_t begin = first_after(state.last_run_us);
  int64_t end = first_after(state.run_started_at_us);
  return Page(pagination, begin, std::max(begin, end));
}

Status RegisterGeneratorSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "generator",
      .description = "Synthetic records for tests and benchmarks, with incremental support.",
      // Two streams with the same records, so that per-stream state (resets, watermarks) can
      // be tested under one pipeline name.
      .streams = {{.name = "records",
                   .supports_incremental = true,
                   .description = "count records {id, name, updated_at, value}."},
                  {.name = "events",
                   .supports_incremental = true,
                   .description = "The same records as `records`, as a second stream."}},
      .config = {.fields = GeneratorFields(), .unknown_keys = UnknownKeys::kWarn},
      .factory = [](const SourceContext& context) -> Result<std::unique_ptr<Source>> {
        auto source = std::make_unique<GeneratorSource>(context);
        BIZON_RETURN_IF_ERROR(source->Init());
        return source;
      },
  });
}

}  // namespace bizon
