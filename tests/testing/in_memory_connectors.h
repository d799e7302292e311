// In-memory connectors for unit tests: a Source that serves fixed pages, a Destination that keeps
// what it was given and can be told to fail, and a MessageSource that plays a script of queue
// messages and timeouts to the consumer. None of them touches a file, a socket or a clock other
// than std::this_thread::sleep_for for a scripted wait.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "bizon/destination.h"
#include "bizon/record_batch.h"
#include "bizon/source.h"
#include "bizon/status.h"
#include "bizon/value.h"
#include "engine/consumer.h"
#include "engine/queue/queue_message.h"

namespace bizon::testing_support {

/// `count` records with ids "<prefix><n>" and payloads {"n": n, "pad": "<pad_bytes x>"}.
inline RecordBatch MakeRecords(int count, std::string_view prefix = "r", size_t pad_bytes = 0,
                               int first = 0) {
  RecordBatch batch;
  std::string pad(pad_bytes, 'x');
  for (int i = first; i < first + count; ++i) {
    batch.Add(std::string(prefix) + std::to_string(i),
              "{\"n\": " + std::to_string(i) + ", \"pad\": \"" + pad + "\"}", 1'000 + i);
  }
  return batch;
}

/// A Source over fixed pages. Pagination is {"page": <index of the next page>}; the last page
/// returns an empty pagination. Get() checks that it was asked for the page it handed out last,
/// so a consumer that loses its position fails the test instead of silently refetching.
class InMemorySource final : public Source {
 public:
  explicit InMemorySource(std::vector<RecordBatch> pages) : pages_(std::move(pages)) {}

  /// Get() for page `page` fails with `error` (once per call, every call).
  void FailAt(int64_t page, Status error) {
    fail_page_ = page;
    fail_error_ = std::move(error);
  }

  std::optional<int64_t> TotalRecordsCount() override {
    int64_t total = 0;
    for (const RecordBatch& page : pages_) total += static_cast<int64_t>(page.size());
    return total;
  }

  Result<SourceIteration> Get(const Value& pagination) override {
    int64_t page = pagination.is_map() ? pagination.GetInteger("page", 0) : 0;
    requested_.push_back(page);
    if (page < 0 || page >= static_cast<int64_t>(pages_.size())) {
      return Fail(InvalidArgumentError("no page " + std::to_string(page)));
    }
    if (fail_page_ && *fail_page_ == page) return Fail(fail_error_);
    SourceIteration iteration;
    iteration.records.AppendRange(pages_[static_cast<size_t>(page)], 0,
                                  pages_[static_cast<size_t>(page)].size());
    if (page + 1 < static_cast<int64_t>(pages_.size())) {
      iteration.next_pagination.Set("page", Value(page + 1));
    }
    return iteration;
  }

  /// Serves the same pages as Get(), and keeps the window it was asked for.
  Result<SourceIteration> GetRecordsAfter(const IncrementalState& state,
                                          const Value& pagination) override {
    windows_.push_back(state);
    return Get(pagination);
  }

  Status Commit(const Value& up_to) override {
    ++commits_;
    committed_.push_back(up_to);
    return Status::Ok();
  }

  const std::vector<int64_t>& requested() const { return requested_; }
  const std::vector<IncrementalState>& windows() const { return windows_; }
  int commits() const { return commits_; }
  /// What each Commit() was given.
  const std::vector<Value>& committed() const { return committed_; }

 private:
  std::vector<RecordBatch> pages_;
  std::optional<int64_t> fail_page_;
  Status fail_error_;
  std::vector<int64_t> requested_;
  std::vector<IncrementalState> windows_;
  int commits_ = 0;
  std::vector<Value> committed_;
};

/// A Destination that keeps every batch it is given. Write() and Sync() return the state
/// {"rows": <rows durable so far>}, which Open() restores, so a resumed consumer can be checked
/// to hand back what was written. With `can_append`, rows arrive through Append() and become
/// durable on Sync().
class InMemoryDestination final : public Destination {
 public:
  explicit InMemoryDestination(bool can_append = false) : can_append_(can_append) {}

  /// The `n`-th call (0-based) to Write() or Sync() fails with `error`.
  void FailWriteNumber(int n, Status error) {
    fail_write_ = n;
    fail_error_ = std::move(error);
  }
  void FailFinalize(Status error) { finalize_error_ = std::move(error); }

  Status Open(const Value& resume_state) override {
    opened_with_.push_back(resume_state);
    durable_rows_ = resume_state.is_map() ? resume_state.GetInteger("rows", 0) : 0;
    return Status::Ok();
  }

  Result<Value> Write(const RecordBatch& records, int64_t loaded_at_us) override {
    (void)loaded_at_us;
    if (write_calls_++ == fail_write_) return Fail(fail_error_);
    writes_.push_back(Copy(records));
    durable_rows_ += static_cast<int64_t>(records.size());
    return State();
  }

  bool CanAppend() const override { return can_append_; }

  Status Append(const RecordBatch& records, int64_t loaded_at_us) override {
    (void)loaded_at_us;
    appended_.AppendRange(records, 0, records.size());
    return Status::Ok();
  }

  Result<Value> Sync() override {
    if (write_calls_++ == fail_write_) return Fail(fail_error_);
    durable_rows_ += static_cast<int64_t>(appended_.size());
    writes_.push_back(std::move(appended_));
    appended_ = RecordBatch();
    return State();
  }

  /// OnCursorRecorded() fails with `error`.
  void FailOnCursorRecorded(Status error) { recorded_error_ = std::move(error); }

  Status OnCursorRecorded(const Value& state) override {
    recorded_states_.push_back(state);
    return recorded_error_;
  }

  Status Finalize() override {
    ++finalized_;
    return finalize_error_;
  }

  Status OnJobSucceeded() override {
    ++succeeded_;
    return Status::Ok();
  }

  /// What each durable Write() or Sync() held, in order.
  const std::vector<RecordBatch>& writes() const { return writes_; }
  std::vector<size_t> WriteSizes() const {
    std::vector<size_t> sizes;
    for (const RecordBatch& batch : writes_) sizes.push_back(batch.size());
    return sizes;
  }
  /// Every durable record id, in write order.
  std::vector<std::string> Ids() const {
    std::vector<std::string> ids;
    for (const RecordBatch& batch : writes_) {
      for (size_t i = 0; i < batch.size(); ++i) ids.emplace_back(batch.id(i));
    }
    return ids;
  }
  const std::vector<Value>& opened_with() const { return opened_with_; }
  /// The states OnCursorRecorded() was given, in order.
  const std::vector<Value>& recorded_states() const { return recorded_states_; }
  int finalized() const { return finalized_; }
  int succeeded() const { return succeeded_; }

 private:
  static RecordBatch Copy(const RecordBatch& records) {
    RecordBatch copy;
    copy.AppendRange(records, 0, records.size());
    return copy;
  }
  Value State() const {
    Value state = Value::EmptyMap();
    state.Set("rows", Value(durable_rows_));
    return state;
  }

  bool can_append_;
  int write_calls_ = 0;
  int fail_write_ = -1;
  Status fail_error_;
  Status finalize_error_;
  std::vector<RecordBatch> writes_;
  RecordBatch appended_;
  int64_t durable_rows_ = 0;
  std::vector<Value> opened_with_;
  std::vector<Value> recorded_states_;
  Status recorded_error_;
  int finalized_ = 0;
  int succeeded_ = 0;
};

/// A MessageSource that plays a script: messages, scripted waits that end in a timeout (nullopt)
/// and channel errors. Once the script is over, Next() fails the test's run with kInternal so a
/// consumer that asks for more than it should never hangs.
class ScriptedMessageSource final : public MessageSource {
 public:
  struct Timeout {
    std::chrono::milliseconds wait{0};
  };
  using Step = std::variant<QueueMessage, Timeout, Status>;

  ScriptedMessageSource& Data(int64_t iteration, RecordBatch records, Value next_pagination,
                              std::optional<Value> next_state = std::nullopt) {
    QueueMessage message;
    message.kind = QueueMessage::Kind::kData;
    message.iteration = iteration;
    message.records = std::move(records);
    message.next_pagination = std::move(next_pagination);
    message.next_state = std::move(next_state);
    steps_.emplace_back(std::move(message));
    return *this;
  }
  ScriptedMessageSource& End(bool source_exhausted = true) {
    QueueMessage message;
    message.kind = QueueMessage::Kind::kTermination;
    message.source_exhausted = source_exhausted;
    steps_.emplace_back(std::move(message));
    return *this;
  }
  ScriptedMessageSource& ErrorEnd(Status error) {
    QueueMessage message;
    message.kind = QueueMessage::Kind::kErrorTermination;
    message.error = std::move(error);
    steps_.emplace_back(std::move(message));
    return *this;
  }
  ScriptedMessageSource& Wait(std::chrono::milliseconds wait) {
    steps_.emplace_back(Timeout{wait});
    return *this;
  }
  ScriptedMessageSource& Break(Status error) {
    steps_.emplace_back(std::move(error));
    return *this;
  }

  Result<std::optional<QueueMessage>> Next(std::chrono::milliseconds timeout) override {
    (void)timeout;
    ++calls_;
    if (steps_.empty()) {
      return Fail(InternalError("the scripted message source was asked past its script"));
    }
    Step step = std::move(steps_.front());
    steps_.pop_front();
    if (auto* message = std::get_if<QueueMessage>(&step)) {
      return std::optional<QueueMessage>(std::move(*message));
    }
    if (auto* wait = std::get_if<Timeout>(&step)) {
      std::this_thread::sleep_for(wait->wait);
      return std::optional<QueueMessage>();
    }
    return Fail(std::get<Status>(step));
  }

  size_t remaining() const { return steps_.size(); }
  int calls() const { return calls_; }

 private:
  std::deque<Step> steps_;
  int calls_ = 0;
};

/// {"page": n}: the pagination InMemorySource and the consumer tests use.
inline Value Page(int64_t n) {
  Value pagination = Value::EmptyMap();
  pagination.Set("page", Value(n));
  return pagination;
}

}  // namespace bizon::testing_support
