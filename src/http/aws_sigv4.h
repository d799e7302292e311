// AWS Signature Version 4 for S3-compatible servers: an Authenticator for HttpSession.
//
// The request's URL must already carry its query string, percent-encoded with PercentEncode()
// (url.h), and its path segments encoded the same way; `request.query` must be empty. The signer
// signs the host, every header of the request, and the payload's SHA-256, which it sends as
// x-amz-content-sha256 (S3 checks it against the body).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "http/authenticator.h"
#include "http/http_session.h"

namespace bizon {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  /// Temporary credentials' token (x-amz-security-token); empty for long-term keys.
  std::string session_token;
};

/// Adds x-amz-date, x-amz-content-sha256, x-amz-security-token (when there is a token) and
/// Authorization to `request`. `amz_date` is the signing time as YYYYMMDDTHHMMSSZ (UTC).
Status SignAwsV4(HttpRequest& request, const AwsCredentials& credentials, std::string_view region,
                 std::string_view service, std::string_view amz_date);

/// The hex SHA-256 of `data` (lower case).
std::string Sha256Hex(std::string_view data);

/// Signs every request with the current time.
class AwsSigV4Authenticator final : public Authenticator {
 public:
  AwsSigV4Authenticator(AwsCredentials credentials, std::string region, std::string service)
      : credentials_(std::move(credentials)),
        region_(std::move(region)),
        service_(std::move(service)) {}
  Status Apply(HttpRequest& request) override;

 private:
  AwsCredentials credentials_;
  std::string region_;
  std::string service_;
};

}  // namespace bizon
