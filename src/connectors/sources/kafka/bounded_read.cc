#include "connectors/sources/kafka/bounded_read.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

namespace bizon::kafka {

BoundedRead::BoundedRead(const KafkaSourceOptions& options, KafkaConnection& connection,
                         MessageDecoder& decoder)
    : options_(options), connection_(connection), decoder_(decoder) {}

Status BoundedRead::FetchBounds() {
  const std::string& topic = options_.topics.front().name;
  BIZON_ASSIGN_OR_RETURN(auto counts, connection_.FetchPartitionCounts());
  for (int partition = 0; partition < counts[topic]; ++partition) {
    auto marks = connection_.consumer().QueryWatermarks(topic, partition, connection_.timeout());
    if (!marks) {
      return UnavailableError(fmt::format("cannot read the watermarks of {} partition {}: {}",
                                          topic, partition, ErrorText(marks.error())));
    }
    partitions_[partition] = {.first = marks->low, .last = marks->high, .to_fetch = marks->low};
  }
  return Status::Ok();
}

Status BoundedRead::Start(const Value& pagination) {
  const std::string& topic = options_.topics.front().name;
  partitions_.clear();
  if (const Value* partitions = pagination.Find("partitions");
      partitions != nullptr && partitions->is_map()) {
    for (const auto& [index, state] : partitions->AsMap()) {
      partitions_[static_cast<int32_t>(std::strtol(index.c_str(), nullptr, 10))] = {
          .first = state.GetInteger("first"),
          .last = state.GetInteger("last"),
          .to_fetch = state.GetInteger("to_fetch")};
    }
  } else {
    BIZON_RETURN_IF_ERROR(FetchBounds());
  }
  PartitionList assignment(static_cast<int>(partitions_.size()));
  for (const auto& [partition, state] : partitions_) {
    if (!state.done()) assignment.Add(topic, partition, state.to_fetch);
  }
  if (ErrorCode error = connection_.consumer().Assign(assignment); error != ErrorCode::kNoError) {
    return UnavailableError(
        fmt::format("cannot assign the partitions of {}: {}", topic, ErrorText(error)));
  }
  started_ = true;
  return Status::Ok();
}

void BoundedRead::Finish(int32_t partition) {
  connection_.consumer().Pause(options_.topics.front().name, partition);
}

Status BoundedRead::Read(const Value& pagination, SourceIteration& iteration) {
  if (!started_) BIZON_RETURN_IF_ERROR(Start(pagination));
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(options_.consumer_timeout_s);
  int64_t consumed = 0;
  bool progressed = false;
  bool timed_out = false;
  while (consumed < options_.batch_size && !Done() && !timed_out) {
    connection_.consumer().PollBatch(deadline, static_cast<size_t>(options_.batch_size - consumed),
                                     messages_);
    timed_out = messages_.empty();
    for (const Message& message : messages_) {
      if (Status read = ReadOne(message, iteration.records, consumed, progressed); !read.ok()) {
        messages_.clear();
        return read;
      }
    }
  }
  messages_.clear();
  BIZON_RETURN_IF_ERROR(connection_.CheckFatalError());
  if (Done()) {
    iteration.next_pagination = Value::EmptyMap();
    return Status::Ok();
  }
  if (!progressed) return Stalled();
  iteration.next_pagination = Pagination();
  return Status::Ok();
}

Status BoundedRead::ReadOne(const Message& message, RecordBatch& records, int64_t& consumed,
                            bool& progressed) {
  auto state = partitions_.find(message.partition());
  if (message.error() == ErrorCode::kPartitionEof) {
    if (state != partitions_.end() && !state->second.done()) {
      // Offsets up to the end that never arrive as messages (transaction markers) count too.
      state->second.to_fetch = std::max(state->second.to_fetch, message.offset());
      if (state->second.done()) {
        progressed = true;
        Finish(message.partition());
      }
    }
    return Status::Ok();
  }
  if (message.error() != ErrorCode::kNoError) return connection_.HandleMessageError(message);
  if (state == partitions_.end() || state->second.done() ||
      message.offset() >= state->second.last) {
    return Status::Ok();
  }
  BIZON_RETURN_IF_ERROR(decoder_.Append(message, records));
  state->second.to_fetch = message.offset() + 1;
  progressed = true;
  ++consumed;
  if (state->second.done()) Finish(state->first);
  return Status::Ok();
}

bool BoundedRead::Done() const {
  for (const auto& [partition, state] : partitions_) {
    if (!state.done()) return false;
  }
  return true;
}

Status BoundedRead::Stalled() const {
  std::string pending;
  for (const auto& [partition, state] : partitions_) {
    if (!state.done()) {
      pending += fmt::format("{}{} at {} of {}", pending.empty() ? "" : ", ", partition,
                             state.to_fetch, state.last);
    }
  }
  return UnavailableError(fmt::format(
      "no message from topic {} within consumer_timeout ({} s); partitions still to read: {}",
      options_.topics.front().name, options_.consumer_timeout_s, pending));
}

Value BoundedRead::Pagination() const {
  Value::Map partitions;
  for (const auto& [partition, state] : partitions_) {
    partitions.emplace_back(std::to_string(partition),
                            Value(Value::Map{{"first", Value(state.first)},
                                             {"last", Value(state.last)},
                                             {"to_fetch", Value(state.to_fetch)}}));
  }
  return Value(Value::Map{{"name", Value(options_.topics.front().name)},
                          {"partitions", Value(std::move(partitions))}});
}

}  // namespace bizon::kafka
