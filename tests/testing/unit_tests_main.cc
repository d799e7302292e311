// main() of bizon_unit_tests. TransformWorkers starts its workers by re-executing the running
// binary as `<binary> __transform-worker`, as `bizon` itself does; started that way, this binary
// is such a worker, so engine/transform_workers_test.cc runs real worker processes. Otherwise it
// runs the GoogleTest suite.
#include <gtest/gtest.h>

#include <string_view>

#include "common/logging.h"
#include "engine/transform_workers.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::string_view(argv[1]) == "__transform-worker") {
    bizon::ConfigureLogging("INFO").IgnoreError();  // A constant, always valid.
    return bizon::RunTransformWorker();
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
