// The S3 implementation of ObjectStore: path-style requests to an S3-compatible endpoint, signed
// with SigV4 (http/aws_sigv4.h), through an HttpSession that retries 429/5xx and lost connections
// (every call is idempotent, so PUT and DELETE are retried too).
#pragma once

#include <memory>
#include <string>

#include "connectors/destinations/object_store/object_store.h"
#include "http/http_session.h"

namespace bizon {

struct S3Settings {
  std::string bucket;
  std::string region = "us-east-1";
  /// scheme://host[:port] of an S3-compatible server (path-style: <endpoint>/<bucket>/<name>);
  /// empty: AWS itself, virtual-hosted style (https://<bucket>.s3.<region>.amazonaws.com/<name>).
  std::string endpoint;
  /// Empty: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN from the environment.
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  HttpTimeouts timeouts = {.connect_s = 10, .read_s = 300};
  HttpSleepFunction sleep = ScaledSleep;
};

/// kInvalidArgument (failure class config) without a bucket or credentials, naming what is
/// missing. The secret key and token are registered with SecretMask.
Result<std::unique_ptr<ObjectStore>> MakeS3ObjectStore(S3Settings settings);

}  // namespace bizon
