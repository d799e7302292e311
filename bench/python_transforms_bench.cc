// Throughput of the embedded-Python transforms (src/python/python_transforms.h) on 1M records:
// a pass-through snippet and the README's debezium snippet, applied to batches of 10,000
// records. Build with -DBIZON_PYTHON_BENCH=ON in the release preset:
//   cmake --preset release -DBIZON_PYTHON_BENCH=ON
//   cmake --build --preset release --target bizon_python_transforms_bench
//   build/release/bizon_python_transforms_bench
#include <chrono>
#include <cstdio>
#include <string>

#include "bizon/record_batch.h"
#include "bizon/value.h"
#include "python/python_transforms.h"

namespace {

constexpr size_t kRecords = 1'000'000;
constexpr size_t kBatch = 10'000;

bizon::Value Transform(const char* label, const char* python) {
  return bizon::Value(bizon::Value::List{bizon::Value(
      bizon::Value::Map{{"label", bizon::Value(label)}, {"python", bizon::Value(python)}})});
}

int Run(const char* name, const bizon::Value& transforms, const std::string& payload) {
  auto chain = bizon::TransformChain::Compile(transforms);
  if (!chain) {
    std::fprintf(stderr, "%s\n", chain.error().message().c_str());
    return 1;
  }
  bizon::RecordBatch batch;
  double seconds = 0;
  size_t bytes_out = 0;
  for (size_t done = 0; done < kRecords; done += kBatch) {
    batch.Clear();
    for (size_t i = 0; i < kBatch; ++i) batch.Add(std::to_string(done + i), payload, 0);
    auto start = std::chrono::steady_clock::now();
    bizon::Status status = (*chain)->Apply(batch);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!status.ok()) {
      std::fprintf(stderr, "%s\n", status.message().c_str());
      return 1;
    }
    bytes_out += batch.PayloadBytes();
  }
  std::printf("%-14s %zu records (%zu-byte payload) in %.2f s: %.0f records/s, %.0f MB/s out\n",
              name, kRecords, payload.size(), seconds, static_cast<double>(kRecords) / seconds,
              static_cast<double>(bytes_out) / seconds / 1e6);
  return 0;
}

}  // namespace

int main() {
  std::string small = R"({"id": 9898, "name": "bizon", "age": 26, "tags": ["a", "b"], )"
                      R"("nested": {"x": 1.5, "ok": true}})";
  std::string debezium =
      R"({"value": {"op": "d", "before": {"id": 2, "name": "Bj\u00f6rn", "email": )"
      R"("bjorn@example.com"}, "after": null, "source": {"name": "prod_users_db", )"
      R"("ts_ms": 1700000000123}}, "partition": 1, "offset": 104})";
  int failed = Run("pass-through", Transform("noop", "pass"), small);
  failed |= Run("debezium", Transform("debezium", R"(from datetime import datetime

cluster = data['value']['source']['name'].replace('_', '-')
partition = data['partition']
offset = data['offset']
kafka_timestamp = datetime.utcfromtimestamp(
    data['value']['source']['ts_ms'] / 1000
).strftime('%Y-%m-%d %H:%M:%S.%f')

deleted = False
if data['value']['op'] == 'd':
    data = data['value']['before']
    deleted = True
)"),
                debezium);
  return failed;
}
