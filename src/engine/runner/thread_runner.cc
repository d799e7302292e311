// The thread runner: the producer on a thread of its own (with its own backend connection),
// the consumer on the caller's, an in-process bounded queue between them.
#include <thread>

#include "engine/backend/backend_factory.h"
#include "engine/queue/memory_queue.h"
#include "engine/runner/runner.h"

namespace bizon {
namespace {

class ThreadRunner final : public Runner {
 public:
  RunnerResult Run(const RunContext& context) override {
    const PipelineSettings& settings = context.settings;
    MemoryQueue queue(settings.queue_limits);
    std::atomic<bool> stop{false};
    Acknowledgements acks;
    RunnerResult result;
    std::thread producer_thread([&] {
      auto producer_backend = OpenBackend(settings.backend_config);
      if (!producer_backend) {
        Status failed = producer_backend.error().WithFailureClass(FailureClass::kBackend);
        // Ignored: the consumer is told through the queue or stopped below.
        queue.Push({.kind = QueueMessage::Kind::kErrorTermination, .error = failed}).IgnoreError();
        result.producer = {failed};
        return;
      }
      result.producer = RunProducer(context.source, producer_backend->get(), settings, context.plan,
                                    queue, stop, &acks);
    });
    result.consumer =
        RunConsumer(queue, context.destination, context.backend, settings, context.plan, stop,
                    context.transforms, {.acknowledge = [&acks](const Value& pagination) {
                      acks.Post(pagination);
                      return Status::Ok();
                    }});
    if (!result.consumer->ok()) {
      stop = true;
      queue.Close();
    }
    producer_thread.join();
    // The cursors recorded after the producer's last fetch: the source is this thread's now.
    AcknowledgeLast(context.source, acks, settings, *result.consumer);
    return result;
  }
};

}  // namespace

std::unique_ptr<Runner> MakeThreadRunner() { return std::make_unique<ThreadRunner>(); }

}  // namespace bizon
