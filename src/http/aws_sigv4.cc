#include "http/aws_sigv4.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <vector>

#include "common/ascii.h"

namespace bizon {
namespace {

std::string Hex(const unsigned char* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    hex += kDigits[bytes[i] >> 4];
    hex += kDigits[bytes[i] & 0x0f];
  }
  return hex;
}

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest, &size);
  return std::string(reinterpret_cast<const char*>(digest), size);
}

struct UrlParts {
  std::string host;
  std::string path = "/";
  std::string query;
};

Result<UrlParts> SplitUrl(std::string_view url) {
  size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) {
    return Fail(Status(StatusCode::kInvalidArgument, fmt::format("not an absolute URL: {}", url)));
  }
  std::string_view rest = url.substr(scheme + 3);
  size_t path_start = rest.find_first_of("/?");
  UrlParts parts;
  parts.host = AsciiLower(rest.substr(0, path_start));
  if (path_start == std::string_view::npos) return parts;
  std::string_view tail = rest.substr(path_start);
  size_t question = tail.find('?');
  std::string_view path = tail.substr(0, question);
  if (!path.empty()) parts.path = std::string(path);
  if (question != std::string_view::npos) parts.query = std::string(tail.substr(question + 1));
  return parts;
}

/// The query's name=value pairs sorted by name then value, each side already encoded.
std::string CanonicalQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t equals = pair.find('=');
    pairs.emplace_back(
        std::string(pair.substr(0, equals)),
        equals == std::string_view::npos ? "" : std::string(pair.substr(equals + 1)));
  }
  std::sort(pairs.begin(), pairs.end());
  std::string canonical;
  for (const auto& [name, value] : pairs) {
    if (!canonical.empty()) canonical += '&';
    canonical.append(name).append("=").append(value);
  }
  return canonical;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return Hex(digest, sizeof(digest));
}

Status SignAwsV4(HttpRequest& request, const AwsCredentials& credentials, std::string_view region,
                 std::string_view service, std::string_view amz_date) {
  BIZON_ASSIGN_OR_RETURN(UrlParts url, SplitUrl(request.url));
  std::string payload_hash = Sha256Hex(request.body);
  std::erase_if(request.headers, [](const auto& header) {
    std::string name = AsciiLower(header.first);
    return name == "authorization" || name == "x-amz-date" || name == "x-amz-content-sha256" ||
           name == "x-amz-security-token";
  });
  request.headers.emplace_back("x-amz-date", std::string(amz_date));
  request.headers.emplace_back("x-amz-content-sha256", payload_hash);
  if (!credentials.session_token.empty()) {
    request.headers.emplace_back("x-amz-security-token", credentials.session_token);
  }
  std::map<std::string, std::string> headers{{"host", url.host}};
  for (const auto& [name, value] : request.headers) {
    headers[AsciiLower(name)] = std::string(TrimAsciiSpace(value));
  }
  std::string canonical_headers;
  std::string signed_headers;
  for (const auto& [name, value] : headers) {
    canonical_headers.append(name).append(":").append(value).append("\n");
    signed_headers += (signed_headers.empty() ? "" : ";") + name;
  }
  std::string canonical_request =
      fmt::format("{}\n{}\n{}\n{}\n{}\n{}", request.method, url.path, CanonicalQuery(url.query),
                  canonical_headers, signed_headers, payload_hash);
  std::string_view date = amz_date.substr(0, 8);
  std::string scope = fmt::format("{}/{}/{}/aws4_request", date, region, service);
  std::string string_to_sign =
      fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", amz_date, scope, Sha256Hex(canonical_request));
  std::string key = Hmac("AWS4" + credentials.secret_access_key, date);
  key = Hmac(key, region);
  key = Hmac(key, service);
  key = Hmac(key, "aws4_request");
  std::string signature = Hmac(key, string_to_sign);
  request.headers.emplace_back(
      "Authorization",
      fmt::format("AWS4-HMAC-SHA256 Credential={}/{}, SignedHeaders={}, Signature={}",
                  credentials.access_key_id, scope, signed_headers,
                  Hex(reinterpret_cast<const unsigned char*>(signature.data()), signature.size())));
  return Status::Ok();
}

Status AwsSigV4Authenticator::Apply(HttpRequest& request) {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char amz_date[17];
  std::strftime(amz_date, sizeof(amz_date), "%Y%m%dT%H%M%SZ", &utc);
  return SignAwsV4(request, credentials_, region_, service_, amz_date);
}

}  // namespace bizon
