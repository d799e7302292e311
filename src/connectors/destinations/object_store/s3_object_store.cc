#include "connectors/destinations/object_store/s3_object_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "bizon/secret_mask.h"
#include "http/aws_sigv4.h"
#include "http/url.h"

namespace bizon {
namespace {

/// Percent-encodes each segment of an object name, keeping the slashes between them.
std::string EncodePath(std::string_view name) {
  std::string encoded;
  size_t start = 0;
  while (true) {
    size_t slash = name.find('/', start);
    encoded += PercentEncode(name.substr(start, slash - start));
    if (slash == std::string_view::npos) break;
    encoded += '/';
    start = slash + 1;
  }
  return encoded;
}

std::string XmlUnescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  for (size_t i = 0; i < text.size(); ++i) {
    bool replaced = false;
    if (text[i] == '&') {
      for (const auto& [entity, c] : kEntities) {
        if (text.substr(i, entity.size()) == entity) {
          out += c;
          i += entity.size() - 1;
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) out += text[i];
  }
  return out;
}

/// The text of each <tag>…</tag> inside `xml`, in order.
std::vector<std::string_view> XmlValues(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> values;
  std::string open = fmt::format("<{}>", tag);
  std::string close = fmt::format("</{}>", tag);
  size_t at = 0;
  while ((at = xml.find(open, at)) != std::string_view::npos) {
    size_t begin = at + open.size();
    size_t end = xml.find(close, begin);
    if (end == std::string_view::npos) break;
    values.push_back(xml.substr(begin, end - begin));
    at = end + close.size();
  }
  return values;
}

std::string EnvOr(const std::string& value, const char* name) {
  if (!value.empty()) return value;
  const char* env = std::getenv(name);
  return env != nullptr ? env : "";
}

class S3ObjectStore final : public ObjectStore {
 public:
  S3ObjectStore(S3Settings settings, AwsCredentials credentials)
      : settings_(std::move(settings)),
        session_(SessionOptions(settings_, std::move(credentials))) {}

  Status PutFile(const std::string& name, const std::string& local_path) override {
    std::ifstream in(local_path, std::ios::binary);
    if (!in) {
      return Status(StatusCode::kUnavailable, fmt::format("cannot read {}", local_path),
                    FailureClass::kDestination);
    }
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return Put(name, data);
  }

  Status Put(const std::string& name, const std::string& data) override {
    auto response = Call("PUT", name, data, {});
    return response.has_value() ? Status::Ok() : std::move(response).error();
  }

  Result<std::string> Get(const std::string& name) override {
    BIZON_ASSIGN_OR_RETURN(HttpResponse response, Call("GET", name, "", {}, /*missing_ok=*/true));
    if (response.status == 404) {
      return Fail(
          NotFoundError(fmt::format("{} does not exist", Uri(name)), FailureClass::kDestination));
    }
    return std::move(response.body);
  }

  Status Copy(const std::string& from, const std::string& to) override {
    HttpHeaders headers{
        {"x-amz-copy-source", "/" + PercentEncode(settings_.bucket) + "/" + EncodePath(from)}};
    BIZON_ASSIGN_OR_RETURN(HttpResponse response,
                           Call("PUT", to, "", headers, /*missing_ok=*/true));
    // NoSuchKey: the source is gone. The part store then looks for the copy a run killed after
    // publishing made (ObjectPartStore::Publish), as it does for GCS.
    if (response.status == 404) {
      return NotFoundError(
          fmt::format("S3 copy {} -> {}: {} does not exist", Uri(from), Uri(to), Uri(from)),
          FailureClass::kDestination);
    }
    // A copy can fail after its 200 status went out: the error is then in the body.
    if (response.body.find("<Error>") != std::string::npos) {
      return Status(StatusCode::kUnavailable,
                    fmt::format("S3 copy {} -> {} failed: {}", Uri(from), Uri(to),
                                BodyExcerpt(response.body)),
                    FailureClass::kDestination);
    }
    return Status::Ok();
  }

  Status Delete(const std::string& name) override {
    auto response = Call("DELETE", name, "", {}, /*missing_ok=*/true);
    return response.has_value() ? Status::Ok() : std::move(response).error();
  }

  Result<std::vector<StoredObject>> List(const std::string& prefix) override;

  std::string Uri(const std::string& name) const override {
    return fmt::format("s3://{}/{}", settings_.bucket, name);
  }

 private:
  static HttpSessionOptions SessionOptions(const S3Settings& settings, AwsCredentials credentials) {
    HttpSessionOptions options;
    options.policy.timeouts = settings.timeouts;
    options.policy.raise_for_status = false;
    options.policy.retries = RetryPolicy{.allowed_methods = {"GET", "PUT", "DELETE", "HEAD"}};
    options.authenticator =
        std::make_shared<AwsSigV4Authenticator>(std::move(credentials), settings.region, "s3");
    options.sleep = settings.sleep;
    return options;
  }

  /// `name` ("" for the bucket) with `query` (already encoded).
  std::string Url(std::string_view name, std::string_view query = "") const {
    std::string url = settings_.endpoint.empty()
                          ? fmt::format("https://{}.s3.{}.amazonaws.com/{}", settings_.bucket,
                                        settings_.region, EncodePath(name))
                          : fmt::format("{}/{}/{}", settings_.endpoint,
                                        PercentEncode(settings_.bucket), EncodePath(name));
    if (!query.empty()) url += "?" + std::string(query);
    return url;
  }

  Result<HttpResponse> Send(const HttpRequest& request, std::string_view what, bool missing_ok) {
    auto response = session_.Send(request);
    if (!response.has_value()) {
      return Fail(response.error().Reclassified(FailureClass::kDestination));
    }
    if (response->ok() || (missing_ok && response->status == 404)) return std::move(*response);
    return Fail(
        HttpStatusError(request.method, what, *response).Reclassified(FailureClass::kDestination));
  }

  Result<HttpResponse> Call(const std::string& method, const std::string& name, std::string body,
                            HttpHeaders headers, bool missing_ok = false) {
    HttpRequest request{
        .method = method, .url = Url(name), .headers = std::move(headers), .body = std::move(body)};
    return Send(request, Uri(name), missing_ok);
  }

  S3Settings settings_;
  HttpSession session_;
};

Result<std::vector<StoredObject>> S3ObjectStore::List(const std::string& prefix) {
  std::vector<StoredObject> objects;
  std::string token;
  while (true) {
    QueryParams query{{"list-type", "2"}, {"prefix", prefix}};
    if (!token.empty()) query.emplace_back("continuation-token", token);
    HttpRequest request{.method = "GET", .url = Url("", FormEncode(query))};
    BIZON_ASSIGN_OR_RETURN(HttpResponse response,
                           Send(request, Uri(prefix + "*"), /*missing_ok=*/false));
    for (std::string_view contents : XmlValues(response.body, "Contents")) {
      auto keys = XmlValues(contents, "Key");
      auto sizes = XmlValues(contents, "Size");
      if (keys.empty()) continue;
      int64_t size = 0;  // Stays 0 when S3 sends no Size, or one that is not a number.
      if (!sizes.empty()) {
        std::from_chars(sizes.front().data(), sizes.front().data() + sizes.front().size(), size);
      }
      objects.push_back({.name = XmlUnescape(keys.front()), .size = size});
    }
    auto truncated = XmlValues(response.body, "IsTruncated");
    auto next = XmlValues(response.body, "NextContinuationToken");
    if (truncated.empty() || truncated.front() != "true" || next.empty()) break;
    token = XmlUnescape(next.front());
  }
  std::sort(objects.begin(), objects.end(),
            [](const StoredObject& a, const StoredObject& b) { return a.name < b.name; });
  return objects;
}

}  // namespace

Result<std::unique_ptr<ObjectStore>> MakeS3ObjectStore(S3Settings settings) {
  if (settings.bucket.empty()) {
    return Fail(InvalidArgumentError("the s3 destination needs a bucket"));
  }
  AwsCredentials credentials{
      .access_key_id = EnvOr(settings.access_key_id, "AWS_ACCESS_KEY_ID"),
      .secret_access_key = EnvOr(settings.secret_access_key, "AWS_SECRET_ACCESS_KEY"),
      .session_token = EnvOr(settings.session_token, "AWS_SESSION_TOKEN")};
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    return Fail(InvalidArgumentError(
        "the s3 destination needs access_key_id and secret_access_key (in its config, or "
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment)"));
  }
  SecretMask::Global().Add(credentials.secret_access_key);
  if (!credentials.session_token.empty()) SecretMask::Global().Add(credentials.session_token);
  while (settings.endpoint.ends_with('/')) settings.endpoint.pop_back();
  return std::unique_ptr<ObjectStore>(
      std::make_unique<S3ObjectStore>(std::move(settings), std::move(credentials)));
}

}  // namespace bizon
