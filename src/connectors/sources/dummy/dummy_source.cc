#include "connectors/sources/dummy/dummy_source.h"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <thread>

#include "bizon/clock.h"
#include "connectors/registration.h"

namespace bizon {
namespace {

struct FakeRecord {
  int id;
  std::string_view creature;
  std::string_view plant;
  int age;
};

// The fake API's three pages; page 2 is served for any cursor other than the final one.
constexpr std::array<std::array<FakeRecord, 2>, 3> kPages = {{
    {{{9898, "bizon", "tree", 26}, {88787, "croco", "flower", 23}}},
    {{{98, "froggy", "cactus", 26}, {3333, "turtle", "bamboo", 23}}},
    {{{56565, "poulpo", "rose", 26}, {0, "", "", 0}}},
}};
constexpr std::array<std::string_view, 3> kNextCursor = {"vfvfvuhfefpeiduzhihxb", "final-cursor",
                                                         ""};

/// The dummy's own options, declared once: the registry's spec and the reader both use it.
std::vector<FieldSpec> DummyFields() {
  return {
      AuthenticationField({"api_key", "oauth"}, /*required=*/true),
      Option::Integer("sleep", "Seconds to wait before each fake API call.").Default(0).Minimum(0)};
}

}  // namespace

Result<std::unique_ptr<DummySource>> DummySource::Create(const SourceContext& context) {
  // Each option is read against its declaration, which holds its default: a reader never
  // writes a default of its own.
  OptionReader options(Option::Object("source", DummyFields()), context.config);
  int64_t sleep_seconds = options.Integer("sleep");
  BIZON_RETURN_IF_ERROR(options.status());
  return std::unique_ptr<DummySource>(new DummySource(context, sleep_seconds));
}

DummySource::DummySource(const SourceContext& context, int64_t sleep_seconds)
    : stream_(context.stream), sync_mode_(context.sync_mode), sleep_seconds_(sleep_seconds) {}

Result<SourceIteration> DummySource::Get(const Value& pagination) {
  if (sleep_seconds_ > 0) std::this_thread::sleep_for(std::chrono::seconds(sleep_seconds_));
  std::string cursor = pagination.GetString("cursor");
  size_t page = cursor.empty() ? 0 : (cursor == "final-cursor" ? 2 : 1);

  SourceIteration iteration;
  std::string_view next = kNextCursor[page];
  int64_t now = NowMicros();
  for (const FakeRecord& record : kPages[page]) {
    if (record.id == 0) continue;
    std::string_view name = stream_ == "plants" ? record.plant : record.creature;
    std::string json =
        fmt::format(R"({{"id":{},"name":"{}","age":{}}})", record.id, name, record.age);
    // In stream mode the original routes page-2 records to "routed", the others to the stream.
    // Both arms are views: a `?:` mixing a literal with `stream_` would make a std::string
    // temporary, and the view would outlive it.
    std::string_view destination;
    if (sync_mode_ == SyncMode::kStream) {
      destination = next == "final-cursor" ? std::string_view("routed") : std::string_view(stream_);
    }
    iteration.records.Add(std::to_string(record.id), json, now, destination);
  }
  if (!next.empty()) {
    iteration.next_pagination = Value(Value::Map{{"cursor", Value(next)}});
  }
  return iteration;
}

Status RegisterDummySource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "dummy",
      .description = "A fixed fake API for demos and tests (5 records per stream).",
      .streams = {{.name = "creatures", .description = "Five animals."},
                  {.name = "plants", .description = "Five plants."}},
      .config = {.fields = DummyFields(), .unknown_keys = UnknownKeys::kWarn},
      .factory = [](const SourceContext& context) -> Result<std::unique_ptr<Source>> {
        BIZON_ASSIGN_OR_RETURN(std::unique_ptr<DummySource> source, DummySource::Create(context));
        return std::unique_ptr<Source>(std::move(source));
      },
  });
}

}  // namespace bizon
