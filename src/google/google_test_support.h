// Test support for the Google clients' unit tests.
//
// FakeProcess: a fake API server from tests/fakes/ run as a child process: the script
// prints its base URL on its first line of stdout, takes POSTs to /_fake/<control>, answers
// GET /_fake/report with {"violations": [...], "requests": [...]}, and exits on POST /_fake/stop
// or when its parent goes away (fake_server.serve_as_process).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bizon/value.h"
#include "google/credentials.h"
#include "http/http_session.h"
#include "testing/test_servers.h"

/// Skips a test that needs the BigQuery emulator when BIGQUERY_EMULATOR_HOST is unset
/// (scripts/test-servers.sh start bigquery), or fails it under CI=true, where it must run.
#define BIZON_REQUIRE_BIGQUERY_EMULATOR()                                              \
  do {                                                                                 \
    if (std::getenv("BIGQUERY_EMULATOR_HOST") == nullptr) {                            \
      BIZON_SKIP_OR_FAIL(                                                              \
          "BIGQUERY_EMULATOR_HOST is unset (scripts/test-servers.sh start bigquery)"); \
    }                                                                                  \
  } while (false)

namespace bizon {

/// An environment holding only `values` (GoogleEnvFunction).
inline GoogleEnvFunction EnvOf(std::vector<std::pair<std::string, std::string>> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    for (const auto& [key, value] : values) {
      if (key == name) return value;
    }
    return std::nullopt;
  };
}

class FakeProcess {
 public:
  /// `script` is the file name under tests/fakes/.
  explicit FakeProcess(const std::string& script) {
    std::string path = std::string(BIZON_SOURCE_DIR) + "/tests/fakes/" + script;
    pipe_ = popen(("exec python3 " + path).c_str(), "r");
    if (pipe_ == nullptr) return;
    char line[256] = {0};
    if (fgets(line, sizeof line, pipe_) != nullptr) {
      url_ = line;
      while (!url_.empty() && (url_.back() == '\n' || url_.back() == '\r')) url_.pop_back();
    }
    session_ = std::make_unique<HttpSession>(HttpSessionOptions{});
  }
  ~FakeProcess() {
    if (pipe_ == nullptr) return;
    if (!url_.empty()) {
      [[maybe_unused]] auto stopped = session_->PostJson(url_ + "/_fake/stop", "{}");
    }
    pclose(pipe_);
  }
  FakeProcess(const FakeProcess&) = delete;
  FakeProcess& operator=(const FakeProcess&) = delete;

  /// Empty when the script did not start.
  const std::string& url() const { return url_; }

  /// POST /_fake/<what> with a JSON body; fails the test unless it is answered 2xx.
  void Control(const std::string& what, const std::string& json) {
    auto response = session_->PostJson(url_ + "/_fake/" + what, json);
    ASSERT_TRUE(response && response->ok()) << "POST /_fake/" << what;
  }
  Value Report() {
    auto response = session_->Get(url_ + "/_fake/report");
    if (!response) return Value();
    auto parsed = Value::FromJson(response->body);
    return parsed ? *parsed : Value();
  }
  /// The recorded violations as JSON ("[]" when none).
  std::string Violations() {
    Value report = Report();
    const Value* violations = report.Find("violations");
    return violations == nullptr ? "no report" : violations->ToJson();
  }

 private:
  FILE* pipe_ = nullptr;
  std::string url_;
  std::unique_ptr<HttpSession> session_;
};

}  // namespace bizon
