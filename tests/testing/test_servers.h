// The policy for tests that need a server (PostgreSQL, the BigQuery or GCS emulator): on a
// developer's machine without it they skip; under CI (CI=true, as .ci/run sets it) every server
// must run, so a missing one fails instead of skipping unnoticed. The e2e suite follows the same
// rule (tests/e2e/support/servers.py).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace bizon::testing_support {

/// True under CI: CI set to 1, true or yes (any case), as the e2e suite reads it.
inline bool ServersRequired() {
  const char* ci = std::getenv("CI");
  if (ci == nullptr) return false;
  std::string value(ci);
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return value == "1" || value == "true" || value == "yes";
}

}  // namespace bizon::testing_support

/// Skips the current test for `reason`, or fails it under CI. A macro, as GTEST_SKIP and FAIL
/// return from the test body that uses them.
#define BIZON_SKIP_OR_FAIL(reason)                                                          \
  do {                                                                                      \
    const std::string bizon_skip_reason_ = (reason);                                        \
    if (::bizon::testing_support::ServersRequired()) {                                      \
      FAIL() << bizon_skip_reason_ << " (CI is set: a missing test server fails the test)"; \
    }                                                                                       \
    GTEST_SKIP() << bizon_skip_reason_;                                                     \
  } while (0)
