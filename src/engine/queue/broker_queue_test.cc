#include "engine/queue/broker_queue.h"

#include <gtest/gtest.h>

#include <deque>

namespace bizon {
namespace {

QueueMessage Data(int64_t iteration, int records, size_t payload_bytes = 10) {
  QueueMessage message;
  message.iteration = iteration;
  message.extracted_at_us = 1'700'000'000'000'000 + iteration;
  message.next_pagination = Value(Value::Map{{"offset", Value(iteration + 1)}});
  for (int i = 0; i < records; ++i) {
    std::string payload = "{\"n\":\"" + std::string(payload_bytes, 'x') + "\"}";
    message.records.Add(std::to_string(iteration * 1000 + i), payload, 42, "");
  }
  return message;
}

QueueMessage Termination(int64_t iteration) {
  QueueMessage message;
  message.kind = QueueMessage::Kind::kTermination;
  message.iteration = iteration;
  return message;
}

// A broker in memory: what the sender published, delivered in order with increasing offsets;
// Acknowledge() records what was acknowledged; Reconnect() makes every unacknowledged frame
// come again under a new session, as RabbitMQ requeues on a lost connection.
struct FakeBroker {
  std::vector<std::string> published;
  size_t delivered = 0;
  int64_t acknowledged = -1;  // Offset of the last acknowledged frame.
  uint64_t session = 0;
  size_t max_frame_bytes = 1 << 20;
  bool fail_sends = false;

  void Reconnect() {
    ++session;
    delivered = static_cast<size_t>(acknowledged + 1);
  }
};

class FakeSender final : public BrokerSender {
 public:
  explicit FakeSender(FakeBroker& broker) : broker_(broker) {}
  Status Send(std::string_view, const std::vector<std::string>& frames) override {
    if (broker_.fail_sends) return UnavailableError("broker down");
    for (const std::string& frame : frames) broker_.published.push_back(frame);
    return Status::Ok();
  }
  size_t max_frame_bytes() const override { return broker_.max_frame_bytes; }

 private:
  FakeBroker& broker_;
};

class FakeReceiver final : public BrokerReceiver {
 public:
  explicit FakeReceiver(FakeBroker& broker) : broker_(broker) {}
  Result<std::optional<ReceivedFrame>> Receive(std::chrono::milliseconds) override {
    if (broker_.delivered >= broker_.published.size()) return std::optional<ReceivedFrame>();
    size_t offset = broker_.delivered++;
    return std::optional<ReceivedFrame>(ReceivedFrame{
        broker_.published[offset], {.lane = 0, .offset = static_cast<int64_t>(offset)}});
  }
  Status Acknowledge(const FramePosition& position) override {
    EXPECT_GT(position.offset, broker_.acknowledged) << "acknowledgements move forward";
    broker_.acknowledged = position.offset;
    return Status::Ok();
  }
  uint64_t session() const override { return broker_.session; }

 private:
  FakeBroker& broker_;
};

BrokerSink Sink(FakeBroker& broker, std::string job) {
  return BrokerSink(std::make_unique<FakeSender>(broker), std::move(job));
}

BrokerSource Source(FakeBroker& broker, std::string job, int64_t next_iteration = 0) {
  return BrokerSource(std::make_unique<FakeReceiver>(broker), std::move(job), next_iteration);
}

// The fake answers at once, with a frame or with none, so a long deadline costs nothing; a short
// one could run out while Next() skips frames on a loaded machine and read as "no message".
constexpr std::chrono::milliseconds kNextTimeout{5000};

std::optional<QueueMessage> Take(BrokerSource& source) {
  auto next = source.Next(kNextTimeout);
  EXPECT_TRUE(next.has_value()) << next.error().message();
  return next ? std::move(*next) : std::nullopt;
}

TEST(BrokerFrameTest, SplitsAndReassemblesAMessageLargerThanOneFrame) {
  std::string encoded = EncodeMessage(Data(3, 200, 100));
  FrameHeader header{.job_id = "job-a", .iteration = 3};
  std::vector<std::string> frames = SplitIntoFrames(header, encoded, 1000);
  ASSERT_GT(frames.size(), 10u);
  FrameAssembler assembler;
  std::optional<std::string> whole;
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_LE(frames[i].size(), 1000u);
    auto parsed = ParseFrame(frames[i]);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(parsed->header.job_id, "job-a");
    EXPECT_EQ(parsed->header.iteration, 3);
    EXPECT_EQ(parsed->header.part, i);
    EXPECT_EQ(parsed->header.parts, frames.size());
    whole = assembler.Add(*parsed);
    EXPECT_EQ(whole.has_value(), i + 1 == frames.size());
  }
  EXPECT_EQ(*whole, encoded);
}

TEST(BrokerFrameTest, ARedeliveredHeadRestartsTheMessage) {
  std::string encoded = EncodeMessage(Data(0, 50, 100));
  std::vector<std::string> frames = SplitIntoFrames({.job_id = "j"}, encoded, 2000);
  ASSERT_GE(frames.size(), 3u);
  FrameAssembler assembler;
  EXPECT_FALSE(assembler.Add(*ParseFrame(frames[0])).has_value());
  EXPECT_FALSE(assembler.Add(*ParseFrame(frames[1])).has_value());
  // The connection dropped: the whole message comes again from its first frame.
  std::optional<std::string> whole;
  for (const std::string& frame : frames) whole = assembler.Add(*ParseFrame(frame));
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(*whole, encoded);
}

TEST(BrokerFrameTest, RejectsBytesThatAreNotAFrame) {
  auto parsed = ParseFrame("{\"hello\": 1}");
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.error().failure_class(), FailureClass::kQueue);
  EXPECT_NE(parsed.error().message().find("not a bizon frame"), std::string::npos);
}

TEST(PendingAcksTest, AcknowledgesUpToTheFirstUnsettledFrameOfEachLane) {
  PendingAcks acks;
  acks.Add({0, 10}, 0);
  acks.Add({0, 11}, std::nullopt);  // Settled at once (a duplicate).
  acks.Add({0, 12}, 1);
  acks.Add({1, 5}, 2);
  std::vector<FramePosition> ready = acks.Settle(0);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].lane, 0);
  EXPECT_EQ(ready[0].offset, 11);
  ready = acks.Settle(2);
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].offset, 12);
  EXPECT_EQ(ready[1].offset, 5);
  EXPECT_EQ(acks.size(), 0u);
}

TEST(BrokerQueueTest, DeliversEachIterationOnceAndAcknowledgesOnlyWhatIsSettled) {
  FakeBroker broker;
  broker.max_frame_bytes = 600;  // Several frames per iteration.
  BrokerSink sink = Sink(broker, "job-1");
  for (int64_t i = 0; i < 3; ++i) ASSERT_TRUE(sink.Push(Data(i, 20)).ok());
  ASSERT_TRUE(sink.Push(Termination(3)).ok());

  BrokerSource source = Source(broker, "job-1");
  for (int64_t i = 0; i < 3; ++i) {
    auto message = Take(source);
    ASSERT_TRUE(message.has_value());
    EXPECT_EQ(message->iteration, i);
    EXPECT_EQ(message->records.size(), 20u);
    EXPECT_EQ(message->records.id(5), std::to_string(i * 1000 + 5));
  }
  EXPECT_EQ(broker.acknowledged, -1) << "nothing is acknowledged before a cursor covers it";
  ASSERT_TRUE(source.Settle(1).ok());
  int64_t after_two = broker.acknowledged;
  EXPECT_GE(after_two, 0);
  auto done = Take(source);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->kind, QueueMessage::Kind::kTermination);
  ASSERT_TRUE(source.Settle(2).ok());
  EXPECT_LT(broker.acknowledged, static_cast<int64_t>(broker.published.size()) - 1)
      << "the termination waits for the end of the run";
  ASSERT_TRUE(source.SettleAll().ok());
  EXPECT_EQ(broker.acknowledged, static_cast<int64_t>(broker.published.size()) - 1);
}

TEST(BrokerQueueTest, SkipsRedeliveriesAfterAReconnect) {
  FakeBroker broker;
  BrokerSink sink = Sink(broker, "job-1");
  for (int64_t i = 0; i < 4; ++i) ASSERT_TRUE(sink.Push(Data(i, 2)).ok());
  BrokerSource source = Source(broker, "job-1");
  EXPECT_EQ(Take(source)->iteration, 0);
  EXPECT_EQ(Take(source)->iteration, 1);
  ASSERT_TRUE(source.Settle(0).ok());
  EXPECT_EQ(Take(source)->iteration, 2);
  broker.Reconnect();  // Iterations 1 and 2 come again; the consumer already holds them.
  EXPECT_EQ(Take(source)->iteration, 3);
  EXPECT_EQ(source.skipped_duplicates(), 2);
  ASSERT_TRUE(source.Settle(3).ok());
  EXPECT_EQ(broker.acknowledged, static_cast<int64_t>(broker.published.size()) - 1);
}

TEST(BrokerQueueTest, ARedeliveryOfAnUnwrittenIterationWaitsForItsCursor) {
  FakeBroker broker;
  BrokerSink sink = Sink(broker, "job-1");
  for (int64_t i = 0; i < 2; ++i) ASSERT_TRUE(sink.Push(Data(i, 2)).ok());
  BrokerSource source = Source(broker, "job-1");
  EXPECT_EQ(Take(source)->iteration, 0);
  EXPECT_EQ(Take(source)->iteration, 1);
  broker.Reconnect();  // Both come again while the consumer still buffers them.
  EXPECT_FALSE(Take(source).has_value());
  EXPECT_EQ(source.skipped_duplicates(), 2);
  ASSERT_TRUE(source.Settle(-1).ok());
  EXPECT_EQ(broker.acknowledged, -1) << "a crash now must find both iterations again";
  ASSERT_TRUE(source.Settle(0).ok());
  EXPECT_EQ(broker.acknowledged, 0);
  ASSERT_TRUE(source.Settle(1).ok());
  EXPECT_EQ(broker.acknowledged, 1);
}

TEST(BrokerQueueTest, AResumedConsumerSkipsWhatItsCursorCoversAndOtherJobs) {
  FakeBroker broker;
  BrokerSink old_job = Sink(broker, "job-old");
  ASSERT_TRUE(old_job.Push(Data(0, 1)).ok());
  BrokerSink sink = Sink(broker, "job-1");
  for (int64_t i = 0; i < 3; ++i) ASSERT_TRUE(sink.Push(Data(i, 1)).ok());
  ASSERT_TRUE(sink.Push(Termination(3)).ok());

  BrokerSource source = Source(broker, "job-1", /*next_iteration=*/2);
  auto message = Take(source);
  ASSERT_TRUE(message.has_value());
  EXPECT_EQ(message->iteration, 2);
  EXPECT_EQ(source.skipped_foreign(), 1);
  EXPECT_EQ(source.skipped_duplicates(), 2);
  EXPECT_EQ(Take(source)->kind, QueueMessage::Kind::kTermination);
}

TEST(BrokerQueueTest, AGapInTheIterationsIsAQueueError) {
  FakeBroker broker;
  BrokerSink sink = Sink(broker, "job-1");
  ASSERT_TRUE(sink.Push(Data(5, 1)).ok());
  BrokerSource source = Source(broker, "job-1", 3);
  auto next = source.Next(kNextTimeout);
  ASSERT_FALSE(next.has_value());
  EXPECT_EQ(next.error().failure_class(), FailureClass::kQueue);
  EXPECT_NE(next.error().message().find("expected iteration 3 but received 5"), std::string::npos)
      << next.error().message();
}

TEST(BrokerQueueTest, CarriesTheErrorTermination) {
  FakeBroker broker;
  BrokerSink sink = Sink(broker, "job-1");
  QueueMessage failed;
  failed.kind = QueueMessage::Kind::kErrorTermination;
  failed.iteration = 7;
  failed.error = Status(StatusCode::kUnavailable, "generator failed", FailureClass::kSource);
  ASSERT_TRUE(sink.Push(std::move(failed)).ok());
  BrokerSource source = Source(broker, "job-1");
  auto message = Take(source);
  ASSERT_TRUE(message.has_value());
  EXPECT_EQ(message->kind, QueueMessage::Kind::kErrorTermination);
  EXPECT_EQ(message->error.failure_class(), FailureClass::kSource);
  EXPECT_EQ(message->error.message(), "generator failed");
}

TEST(BrokerQueueTest, AFailedPublishReportsTheBrokerError) {
  FakeBroker broker;
  broker.fail_sends = true;
  BrokerSink sink = Sink(broker, "job-1");
  Status pushed = sink.Push(Data(0, 1));
  EXPECT_FALSE(pushed.ok());
  EXPECT_EQ(pushed.failure_class(), FailureClass::kQueue);
  EXPECT_EQ(pushed.message(), "broker down");
}

}  // namespace
}  // namespace bizon
