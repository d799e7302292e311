#include "http/retry_policy.h"

#include <gtest/gtest.h>

namespace bizon {
namespace {

TEST(RetryPolicyTest, LegacyRetriesOnlyRetryAfterStatuses) {
  RetryPolicy legacy = RetryPolicy::Legacy();
  EXPECT_EQ(legacy.total, 20);
  EXPECT_TRUE(legacy.IsRetryableStatus("GET", 429, /*has_retry_after=*/true));
  EXPECT_TRUE(legacy.IsRetryableStatus("GET", 413, true));
  EXPECT_TRUE(legacy.IsRetryableStatus("POST", 503, true));
  EXPECT_FALSE(legacy.IsRetryableStatus("GET", 429, false));
  EXPECT_FALSE(legacy.IsRetryableStatus("GET", 500, true));
  EXPECT_FALSE(legacy.IsRetryableStatus("GET", 502, true));
  EXPECT_FALSE(legacy.IsRetryableStatus("GET", 504, true));
  EXPECT_FALSE(legacy.IsRetryableStatus("PATCH", 429, true));
}

TEST(RetryPolicyTest, ConfiguredRetriesTheForceList) {
  RetryPolicy policy;
  for (int status : {429, 500, 502, 503, 504, 520, 522, 524}) {
    EXPECT_TRUE(policy.IsRetryableStatus("GET", status, false)) << status;
    EXPECT_TRUE(policy.IsRetryableStatus("post", status, false)) << status;
  }
  EXPECT_FALSE(policy.IsRetryableStatus("GET", 501, false));
  EXPECT_FALSE(policy.IsRetryableStatus("GET", 404, false));
  EXPECT_FALSE(policy.IsRetryableStatus("DELETE", 503, false));
  // Retry-After still makes 413 retryable, as urllib3 does.
  EXPECT_TRUE(policy.IsRetryableStatus("GET", 413, true));
}

TEST(RetryPolicyTest, BackoffDoublesAfterTheFirstRetryAndIsCapped) {
  RetryPolicy policy;  // backoff_factor 2
  EXPECT_EQ(policy.BackoffSeconds(1), 0);
  EXPECT_EQ(policy.BackoffSeconds(2), 4);
  EXPECT_EQ(policy.BackoffSeconds(3), 8);
  EXPECT_EQ(policy.BackoffSeconds(4), 16);
  EXPECT_EQ(policy.BackoffSeconds(10), 120);
  EXPECT_EQ(RetryPolicy::Legacy().BackoffSeconds(2), 2);
}

TEST(RetryPolicyTest, RetryAfterIsCapped) {
  RetryPolicy policy;
  EXPECT_EQ(policy.RetryAfterSeconds(30), 30);
  EXPECT_EQ(policy.RetryAfterSeconds(600), 120);
  policy.retry_after_max.reset();
  EXPECT_EQ(policy.RetryAfterSeconds(600), 600);
  EXPECT_EQ(policy.RetryAfterSeconds(-3), 0);
}

TEST(RetryPolicyTest, ParsesRetryAfterSecondsAndDates) {
  EXPECT_EQ(ParseRetryAfter("7", 0), 7);
  EXPECT_EQ(ParseRetryAfter(" 0 ", 0), 0);
  // 2015-10-21T07:28:00Z is 1445412480.
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", int64_t{1445412470} * 1000000), 10);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", int64_t{1445412490} * 1000000), 0);
  EXPECT_FALSE(ParseRetryAfter("soon", 0).has_value());
  EXPECT_FALSE(ParseRetryAfter("", 0).has_value());
}

TEST(HttpPolicyTest, NoBlockIsTheHistoricalPolicyWithRetryLimit) {
  Value source = Value::EmptyMap();
  source.Set("api_config", Value(Value::Map{{"retry_limit", Value(10)}}));
  auto policy = HttpPolicy::FromSourceConfig(source);
  ASSERT_TRUE(policy.has_value());
  EXPECT_FALSE(policy->configured);
  EXPECT_FALSE(policy->timeouts.connect_s.has_value());
  EXPECT_FALSE(policy->timeouts.read_s.has_value());
  EXPECT_TRUE(policy->retries.status_forcelist.empty());
  EXPECT_EQ(policy->retries.total, 10);
  EXPECT_FALSE(policy->retries.retry_after_max.has_value());
}

TEST(HttpPolicyTest, EmptyBlockSwitchesToTheDefaults) {
  Value source = Value::EmptyMap();
  source.Set("http", Value::EmptyMap());
  auto policy = HttpPolicy::FromSourceConfig(source);
  ASSERT_TRUE(policy.has_value());
  EXPECT_TRUE(policy->configured);
  EXPECT_EQ(policy->timeouts.connect_s, 10);
  EXPECT_EQ(policy->timeouts.read_s, 60);
  EXPECT_TRUE(policy->raise_for_status);
  EXPECT_EQ(policy->retries.total, 10);
  EXPECT_EQ(policy->retries.backoff_factor, 2);
  EXPECT_EQ(policy->retries.status_forcelist,
            (std::vector<int>{429, 500, 502, 503, 504, 520, 522, 524}));
  EXPECT_EQ(policy->retries.allowed_methods, (std::vector<std::string>{"GET", "POST"}));
  EXPECT_EQ(policy->retries.retry_after_max, 120);
}

TEST(HttpPolicyTest, ReadsEveryKey) {
  auto http = Value::FromJson(R"({"timeout": 5, "raise_for_status": false,
      "retries": {"total": 3, "backoff_factor": 0.5, "status_forcelist": [503],
                  "allowed_methods": ["GET"], "retry_after_max": null}})");
  ASSERT_TRUE(http.has_value());
  auto policy = HttpPolicy::FromHttpBlock(*http);
  ASSERT_TRUE(policy.has_value());
  EXPECT_EQ(policy->timeouts.connect_s, 5);
  EXPECT_EQ(policy->timeouts.read_s, 5);
  EXPECT_FALSE(policy->raise_for_status);
  EXPECT_EQ(policy->retries.total, 3);
  EXPECT_EQ(policy->retries.backoff_factor, 0.5);
  EXPECT_EQ(policy->retries.status_forcelist, std::vector<int>{503});
  EXPECT_EQ(policy->retries.allowed_methods, std::vector<std::string>{"GET"});
  EXPECT_FALSE(policy->retries.retry_after_max.has_value());

  auto pair = Value::FromJson(R"({"timeout": [1.5, 30]})");
  auto paired = HttpPolicy::FromHttpBlock(*pair);
  ASSERT_TRUE(paired.has_value());
  EXPECT_EQ(paired->timeouts.connect_s, 1.5);
  EXPECT_EQ(paired->timeouts.read_s, 30);

  auto bad = Value::FromJson(R"({"timeout": [1, 2, 3]})");
  EXPECT_FALSE(HttpPolicy::FromHttpBlock(*bad).has_value());
}

}  // namespace
}  // namespace bizon
