#include "google/gcs_client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <random>

#include "bizon/secret_mask.h"
#include "google/google_endpoint.h"
#include "http/url.h"

namespace bizon {
namespace {

// The session's own errors carry failure class source; the GCS client serves destinations too,
// so its callers tag them.
Status Untagged(const Status& status) { return Status(status.code(), status.message()); }

Status GcsResponseError(std::string_view method, std::string_view url,
                        const HttpResponse& response) {
  Status error = HttpStatusError(method, url, response);
  StatusCode code =
      response.status == 404 || response.status == 410 ? StatusCode::kNotFound : error.code();
  return Status(code, error.message());
}

// "bytes=0-1048575" -> 1048576 persisted bytes; nullopt when unreadable.
std::optional<int64_t> PersistedFromRange(std::string_view range) {
  constexpr std::string_view kPrefix = "bytes=";
  if (!range.starts_with(kPrefix)) return std::nullopt;
  range.remove_prefix(kPrefix.size());
  size_t dash = range.find('-');
  if (dash == std::string_view::npos || range.substr(0, dash) != "0") return std::nullopt;
  std::string_view last_text = range.substr(dash + 1);
  int64_t last = 0;
  auto [end, error] = std::from_chars(last_text.data(), last_text.data() + last_text.size(), last);
  if (error != std::errc() || end != last_text.data() + last_text.size() || last < 0) {
    return std::nullopt;
  }
  return last + 1;
}

class MemorySource final : public GcsUploadSource {
 public:
  explicit MemorySource(std::string_view data) : data_(data) {}
  int64_t size() const override { return static_cast<int64_t>(data_.size()); }
  Result<std::string> Read(int64_t offset, int64_t length) override {
    if (offset < 0 || offset > size()) {
      return Fail(InternalError(fmt::format("upload read at {} outside {} bytes", offset, size())));
    }
    return std::string(data_.substr(static_cast<size_t>(offset), static_cast<size_t>(length)));
  }

 private:
  std::string_view data_;
};

class FileSource final : public GcsUploadSource {
 public:
  FileSource(std::string path, std::ifstream file, int64_t size)
      : path_(std::move(path)), file_(std::move(file)), size_(size) {}
  int64_t size() const override { return size_; }
  Result<std::string> Read(int64_t offset, int64_t length) override {
    length = std::max<int64_t>(0, std::min(length, size_ - offset));
    std::string bytes(static_cast<size_t>(length), '\0');
    file_.clear();
    file_.seekg(offset);
    file_.read(bytes.data(), length);
    if (file_.gcount() != length) {
      return Fail(DataLossError(
          fmt::format("upload file shrank while being read: {} (at byte {})", path_, offset)));
    }
    return bytes;
  }

 private:
  std::string path_;
  std::ifstream file_;
  int64_t size_;
};

}  // namespace

std::optional<std::string> GcsEmulatorEndpoint(const GoogleEnvFunction& env) {
  return GoogleEmulatorEndpoint(env, "STORAGE_EMULATOR_HOST");
}

Result<GcsObject> GcsObject::FromJson(std::string_view json) {
  auto parsed = Value::FromJson(json);
  if (!parsed || !parsed->is_map()) {
    return Fail(DataLossError(
        fmt::format("GCS answered an object that is not a JSON object: {}", BodyExcerpt(json))));
  }
  const Value& object = *parsed;
  GcsObject out{.bucket = object.GetString("bucket"),
                .name = object.GetString("name"),
                .generation = object.GetString("generation"),
                .content_type = object.GetString("contentType"),
                .md5_hash = object.GetString("md5Hash"),
                .crc32c = object.GetString("crc32c"),
                .updated = object.GetString("updated")};
  // The API sends int64 fields as JSON strings.
  std::string size = object.GetString("size");
  if (const Value* number = object.Find("size"); number != nullptr && number->is_integer()) {
    size = std::to_string(number->AsInteger());
  }
  if (!size.empty()) {
    auto [end, error] = std::from_chars(size.data(), size.data() + size.size(), out.size);
    if (error != std::errc() || end != size.data() + size.size()) {
      return Fail(DataLossError(fmt::format("GCS answered an unreadable object size: {}", size)));
    }
  }
  if (out.name.empty()) {
    return Fail(
        DataLossError(fmt::format("GCS answered an object without a name: {}", BodyExcerpt(json))));
  }
  return out;
}

std::unique_ptr<GcsUploadSource> MakeGcsMemorySource(std::string_view data) {
  return std::make_unique<MemorySource>(data);
}

Result<std::unique_ptr<GcsUploadSource>> MakeGcsFileSource(const std::string& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) return Fail(NotFoundError(fmt::format("cannot open the file to upload: {}", path)));
  std::streamoff size = file.tellg();
  if (size < 0) {
    return Fail(FailedPreconditionError(fmt::format("cannot read the file to upload: {}", path)));
  }
  return std::unique_ptr<GcsUploadSource>(
      std::make_unique<FileSource>(path, std::move(file), static_cast<int64_t>(size)));
}

Result<std::unique_ptr<GcsClient>> GcsClient::Make(GcsClientOptions options) {
  if (options.chunk_size <= 0 || options.chunk_size % kGcsChunkQuantum != 0) {
    return Fail(InvalidArgumentError(
        fmt::format("GCS resumable chunk size must be a positive multiple of 262144 bytes: {}",
                    options.chunk_size)));
  }
  BIZON_ASSIGN_OR_RETURN(GoogleApiEndpoint endpoint,
                         ResolveGoogleApiEndpoint({.api = "GCS",
                                                   .endpoint = options.endpoint,
                                                   .emulator_variable = "STORAGE_EMULATOR_HOST",
                                                   .production = kGcsProductionEndpoint,
                                                   .credentials = options.credentials,
                                                   .scope = std::string(kGcsReadWriteScope),
                                                   .sleep = options.sleep,
                                                   .env = options.env}));
  options.credentials = std::move(endpoint.credentials);
  spdlog::info("GCS client: {}{}", endpoint.url,
               endpoint.emulator ? " (STORAGE_EMULATOR_HOST, no credentials)"
                                 : ", " + options.credentials->Describe());
  return std::unique_ptr<GcsClient>(
      new GcsClient(std::move(options), endpoint.url, endpoint.emulator));
}

GcsClient::GcsClient(GcsClientOptions options, std::string endpoint, bool emulator)
    : options_(std::move(options)), endpoint_(std::move(endpoint)), emulator_(emulator) {
  HttpSessionOptions session = GoogleApiSessionOptions(options_.credentials, options_.timeouts,
                                                       options_.retries, options_.sleep);
  session_ = std::make_unique<HttpSession>(session);
  // libcurl sends a request again by itself when a reused HTTP/1.1 connection dies before any
  // answer. For a chunk, that resend would start at an offset the server may have moved past
  // (it can keep part of the bytes of the dropped attempt), which the protocol forbids: the
  // client must ask first. Chunks therefore go on connections that are never reused, so every
  // failure comes back here (and none comes from a connection the server closed between two
  // chunks).
  session.reuse_connections = false;
  upload_session_ = std::make_unique<HttpSession>(std::move(session));
}

Result<HttpResponse> GcsClient::Send(const HttpRequest& request, HttpSession* session) {
  auto response = (session != nullptr ? session : session_.get())->Send(request);
  if (!response) return Fail(Untagged(response.error()));
  return response;
}

std::string GcsClient::ObjectUrl(std::string_view bucket, std::string_view name) const {
  return fmt::format("{}/storage/v1/b/{}/o/{}", endpoint_, PercentEncode(bucket),
                     PercentEncode(name));
}

Result<GcsObject> GcsClient::Upload(std::string_view bucket, std::string_view name,
                                    std::string_view data, std::string_view content_type) {
  if (static_cast<int64_t>(data.size()) < options_.resumable_threshold) {
    return UploadMultipart(bucket, name, data, content_type);
  }
  std::unique_ptr<GcsUploadSource> source = MakeGcsMemorySource(data);
  return UploadResumable(bucket, name, *source, content_type);
}

Result<GcsObject> GcsClient::UploadFile(std::string_view bucket, std::string_view name,
                                        const std::string& path, std::string_view content_type) {
  BIZON_ASSIGN_OR_RETURN(std::unique_ptr<GcsUploadSource> source, MakeGcsFileSource(path));
  if (source->size() < options_.resumable_threshold) {
    BIZON_ASSIGN_OR_RETURN(std::string data, source->Read(0, source->size()));
    return UploadMultipart(bucket, name, data, content_type);
  }
  return UploadResumable(bucket, name, *source, content_type);
}

Result<GcsObject> GcsClient::UploadMultipart(std::string_view bucket, std::string_view name,
                                             std::string_view data, std::string_view content_type) {
  Value metadata(Value::Map{{"name", Value(name)}, {"contentType", Value(content_type)}});
  GoogleMultipartBody multipart = MakeGoogleMultipartBody(metadata.ToJson(), data, content_type);
  std::string url = fmt::format("{}/upload/storage/v1/b/{}/o", endpoint_, PercentEncode(bucket));
  BIZON_ASSIGN_OR_RETURN(HttpResponse response,
                         Send({.method = "POST",
                               .url = url,
                               .query = {{"uploadType", "multipart"}},
                               .headers = {{"Content-Type", std::move(multipart.content_type)}},
                               .body = std::move(multipart.body)}));
  if (!response.ok()) {
    return Fail(GcsResponseError("POST", url + "?uploadType=multipart", response));
  }
  return GcsObject::FromJson(response.body);
}

Result<std::string> GcsClient::StartResumableUpload(std::string_view bucket, std::string_view name,
                                                    int64_t size, std::string_view content_type) {
  std::string url = fmt::format("{}/upload/storage/v1/b/{}/o", endpoint_, PercentEncode(bucket));
  Value metadata(Value::Map{{"name", Value(name)}, {"contentType", Value(content_type)}});
  BIZON_ASSIGN_OR_RETURN(HttpResponse response,
                         Send({.method = "POST",
                               .url = url,
                               .query = {{"uploadType", "resumable"}, {"name", std::string(name)}},
                               .headers = {{"Content-Type", "application/json; charset=UTF-8"},
                                           {"X-Upload-Content-Type", std::string(content_type)},
                                           {"X-Upload-Content-Length", std::to_string(size)}},
                               .body = metadata.ToJson()}));
  if (!response.ok()) {
    return Fail(GcsResponseError("POST", url + "?uploadType=resumable", response));
  }
  std::optional<std::string_view> location = response.Header("location");
  if (!location || location->empty()) {
    return Fail(DataLossError(fmt::format(
        "GCS opened a resumable upload without a Location header: POST {}?uploadType=resumable",
        url)));
  }
  std::string session_uri(*location);
  SecretMask::Global().Add(session_uri);
  return session_uri;
}

Result<GcsUploadStatus> GcsClient::ReadUploadStatus(const std::string& session_uri,
                                                    const HttpResponse& response) {
  if (response.status == 200 || response.status == 201) {
    BIZON_ASSIGN_OR_RETURN(GcsObject object, GcsObject::FromJson(response.body));
    return GcsUploadStatus{.persisted = object.size, .object = std::move(object)};
  }
  if (response.status == 308) {
    std::optional<std::string_view> range = response.Header("range");
    if (!range) return GcsUploadStatus{.persisted = 0};  // Nothing persisted yet.
    std::optional<int64_t> persisted = PersistedFromRange(*range);
    if (!persisted) {
      return Fail(DataLossError(fmt::format(
          "GCS answered an unreadable Range header for a resumable upload: {}", *range)));
    }
    return GcsUploadStatus{.persisted = *persisted};
  }
  return Fail(GcsResponseError("PUT", session_uri, response));
}

Result<GcsUploadStatus> GcsClient::QueryResumableUpload(const std::string& session_uri,
                                                        int64_t size) {
  BIZON_ASSIGN_OR_RETURN(HttpResponse response,
                         Send({.method = "PUT",
                               .url = session_uri,
                               .headers = {{"Content-Range", fmt::format("bytes */{}", size)}}},
                              upload_session_.get()));
  return ReadUploadStatus(session_uri, response);
}

Result<GcsObject> GcsClient::ResumeUpload(const std::string& session_uri, GcsUploadSource& source) {
  // The status query first: after a crash the caller does not know how far the upload got.
  return SendChunks(session_uri, source, /*query_first=*/true);
}

Result<GcsObject> GcsClient::SendChunks(const std::string& session_uri, GcsUploadSource& source,
                                        bool query_first) {
  const int64_t total = source.size();
  int resumes = 0;
  int failures = 0;
  int64_t offset = 0;
  while (true) {
    if (query_first) {
      auto status = QueryResumableUpload(session_uri, total);
      if (!status) {
        if (status.error().code() == StatusCode::kNotFound || ++failures > options_.max_resumes) {
          return Fail(status.error());
        }
        options_.sleep(options_.retries.BackoffSeconds(failures));
        continue;
      }
      if (status->object) return std::move(*status->object);
      if (status->persisted > total) {
        return Fail(DataLossError(
            fmt::format("GCS reports {} bytes persisted of a {}-byte resumable upload",
                        status->persisted, total)));
      }
      if (status->persisted < offset) {
        spdlog::warn(
            "GCS resumable upload: the server kept {} of the {} bytes sent; resending "
            "from there",
            status->persisted, offset);
      }
      offset = status->persisted;
      query_first = false;
    }
    int64_t length = std::min(options_.chunk_size, total - offset);
    BIZON_ASSIGN_OR_RETURN(std::string chunk, source.Read(offset, length));
    std::string range = length == 0
                            ? fmt::format("bytes */{}", total)
                            : fmt::format("bytes {}-{}/{}", offset, offset + length - 1, total);
    auto response = Send({.method = "PUT",
                          .url = session_uri,
                          .headers = {{"Content-Range", range}},
                          .body = std::move(chunk)},
                         upload_session_.get());
    Result<GcsUploadStatus> status = response ? ReadUploadStatus(session_uri, *response)
                                              : Result<GcsUploadStatus>(Fail(response.error()));
    std::string why;
    if (status) {
      if (status->object) return std::move(*status->object);
      if (status->persisted > offset && status->persisted <= total) {
        offset = status->persisted;
        failures = 0;
        continue;
      }
      // The server kept nothing of this chunk (or answered an impossible offset): ask again,
      // counted as a resume so that it cannot go on for ever.
      why = fmt::format("the server kept {} bytes", status->persisted);
    } else {
      if (status.error().code() == StatusCode::kNotFound) return Fail(status.error());
      // A dropped connection or a 5xx: the server may have kept part of the chunk.
      bool retryable = !response || response->status == 429 || response->status >= 500;
      if (!retryable) return Fail(status.error().WithContext("GCS resumable upload failed"));
      why = status.error().message();
    }
    if (++resumes > options_.max_resumes) {
      return Fail(UnavailableError(
          fmt::format("GCS resumable upload gave up after {} resumes at byte {} of {}: {}",
                      options_.max_resumes, offset, total, why)));
    }
    spdlog::warn(
        "GCS resumable upload interrupted at byte {} of {} ({}); asking the server "
        "where it stands (resume {} of {})",
        offset, total, why, resumes, options_.max_resumes);
    ++failures;
    options_.sleep(options_.retries.BackoffSeconds(failures));
    query_first = true;
  }
}

Result<GcsObject> GcsClient::UploadResumable(std::string_view bucket, std::string_view name,
                                             GcsUploadSource& source,
                                             std::string_view content_type) {
  BIZON_ASSIGN_OR_RETURN(std::string session_uri,
                         StartResumableUpload(bucket, name, source.size(), content_type));
  return SendChunks(session_uri, source, /*query_first=*/false);
}

Result<std::string> GcsClient::Download(std::string_view bucket, std::string_view name) {
  std::string url = ObjectUrl(bucket, name);
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, Send({.url = url, .query = {{"alt", "media"}}}));
  if (!response.ok()) return Fail(GcsResponseError("GET", url + "?alt=media", response));
  return std::move(response.body);
}

Result<GcsObject> GcsClient::GetObject(std::string_view bucket, std::string_view name) {
  std::string url = ObjectUrl(bucket, name);
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, Send({.url = url}));
  if (!response.ok()) return Fail(GcsResponseError("GET", url, response));
  return GcsObject::FromJson(response.body);
}

Status GcsClient::Delete(std::string_view bucket, std::string_view name) {
  std::string url = ObjectUrl(bucket, name);
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, Send({.method = "DELETE", .url = url}));
  if (!response.ok()) return GcsResponseError("DELETE", url, response);
  return Status::Ok();
}

Result<GcsObject> GcsClient::Copy(std::string_view bucket, std::string_view name,
                                  std::string_view to_bucket, std::string_view to_name) {
  std::string url = fmt::format("{}/rewriteTo/b/{}/o/{}", ObjectUrl(bucket, name),
                                PercentEncode(to_bucket), PercentEncode(to_name));
  std::string token;
  // Each call copies up to about 1 GiB between locations or storage classes; within one it is
  // done at once. The bound only stops a server that never says done.
  for (int call = 0; call < 10000; ++call) {
    QueryParams query;
    if (!token.empty()) query.emplace_back("rewriteToken", token);
    BIZON_ASSIGN_OR_RETURN(HttpResponse response,
                           Send({.method = "POST",
                                 .url = url,
                                 .query = query,
                                 .headers = {{"Content-Type", "application/json"}},
                                 .body = "{}"}));
    if (!response.ok()) return Fail(GcsResponseError("POST", url, response));
    auto parsed = Value::FromJson(response.body);
    if (!parsed || !parsed->is_map()) {
      return Fail(DataLossError(fmt::format("GCS answered a rewrite that is not a JSON object: {}",
                                            BodyExcerpt(response.body))));
    }
    if (parsed->GetBool("done")) {
      const Value* resource = parsed->Find("resource");
      if (resource == nullptr) {
        return Fail(
            DataLossError(fmt::format("GCS answered a finished rewrite without its "
                                      "object: {}",
                                      BodyExcerpt(response.body))));
      }
      return GcsObject::FromJson(resource->ToJson());
    }
    token = parsed->GetString("rewriteToken");
    if (token.empty()) {
      return Fail(
          DataLossError(fmt::format("GCS answered an unfinished rewrite without a "
                                    "rewriteToken: {}",
                                    BodyExcerpt(response.body))));
    }
  }
  return Fail(DataLossError(fmt::format("GCS never finished the rewrite POST {}", url)));
}

Result<GcsListPage> GcsClient::ListPage(std::string_view bucket, const GcsListOptions& options) {
  std::string url = fmt::format("{}/storage/v1/b/{}/o", endpoint_, PercentEncode(bucket));
  QueryParams query;
  if (!options.prefix.empty()) query.emplace_back("prefix", options.prefix);
  if (!options.delimiter.empty()) query.emplace_back("delimiter", options.delimiter);
  if (!options.page_token.empty()) query.emplace_back("pageToken", options.page_token);
  if (options.max_results > 0)
    query.emplace_back("maxResults", std::to_string(options.max_results));
  BIZON_ASSIGN_OR_RETURN(HttpResponse response, Send({.url = url, .query = query}));
  if (!response.ok()) return Fail(GcsResponseError("GET", AppendQuery(url, query), response));
  auto parsed = Value::FromJson(response.body);
  if (!parsed || !parsed->is_map()) {
    return Fail(DataLossError(fmt::format("GCS answered a list that is not a JSON object: {}",
                                          BodyExcerpt(response.body))));
  }
  GcsListPage page{.next_page_token = parsed->GetString("nextPageToken")};
  if (const Value* items = parsed->Find("items"); items != nullptr && items->is_list()) {
    for (const Value& item : items->AsList()) {
      BIZON_ASSIGN_OR_RETURN(GcsObject object, GcsObject::FromJson(item.ToJson()));
      page.objects.push_back(std::move(object));
    }
  }
  if (const Value* prefixes = parsed->Find("prefixes");
      prefixes != nullptr && prefixes->is_list()) {
    for (const Value& prefix : prefixes->AsList()) {
      if (prefix.is_string()) page.prefixes.push_back(prefix.AsString());
    }
  }
  return page;
}

Result<std::vector<GcsObject>> GcsClient::List(std::string_view bucket, std::string_view prefix,
                                               int page_size) {
  std::vector<GcsObject> objects;
  GcsListOptions options{.prefix = std::string(prefix), .max_results = page_size};
  while (true) {
    BIZON_ASSIGN_OR_RETURN(GcsListPage page, ListPage(bucket, options));
    std::move(page.objects.begin(), page.objects.end(), std::back_inserter(objects));
    if (page.next_page_token.empty()) return objects;
    if (page.next_page_token == options.page_token) {
      return Fail(DataLossError(fmt::format(
          "GCS answered the same pageToken twice while listing gs://{}/{}", bucket, prefix)));
    }
    options.page_token = std::move(page.next_page_token);
  }
}

Status GcsClient::CreateBucket(std::string_view project, std::string_view bucket, bool exists_ok) {
  std::string url = fmt::format("{}/storage/v1/b", endpoint_);
  Value resource(Value::Map{{"name", Value(bucket)}});
  BIZON_ASSIGN_OR_RETURN(HttpResponse response,
                         Send({.method = "POST",
                               .url = url,
                               .query = {{"project", std::string(project)}},
                               .headers = {{"Content-Type", "application/json"}},
                               .body = resource.ToJson()}));
  if (response.ok() || (exists_ok && response.status == 409)) return Status::Ok();
  return GcsResponseError("POST", url, response);
}

}  // namespace bizon
