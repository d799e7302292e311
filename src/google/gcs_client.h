// GcsClient: Google Cloud Storage through its JSON API v1 (objects insert, get, delete, list),
// over the HTTP toolkit's HttpSession (libcurl).
//
// | call            | request                                                                 |
// |-----------------|-------------------------------------------------------------------------|
// | Upload          | below `resumable_threshold`: POST /upload/storage/v1/b/B/o?uploadType=   |
// |                 | multipart (a JSON part, then the bytes as the given content type);       |
// |                 | from it on: a resumable upload (below)                                   |
// | resumable       | POST ...?uploadType=resumable&name=N opens a session (its URI comes back |
// |                 | in `Location`); each chunk is a PUT of `chunk_size` bytes with           |
// |                 | `Content-Range: bytes F-L/T`, answered 308 (with `Range: bytes=0-P`, the |
// |                 | bytes the server persisted) until the last one, answered 200 with the    |
// |                 | object. After a failed chunk (a dropped connection, a 5xx), the client   |
// |                 | asks where the upload stands (`PUT` with `Content-Range: bytes */T`) and |
// |                 | continues from the persisted offset, not from where it had got to.       |
// | Download        | GET /storage/v1/b/B/o/N?alt=media                                       |
// | GetObject       | GET /storage/v1/b/B/o/N (metadata)                                      |
// | Delete          | DELETE /storage/v1/b/B/o/N (any 2xx: the emulator answers 200, GCS 204)  |
// | Copy            | POST /storage/v1/b/B/o/N/rewriteTo/b/B2/o/N2, again with the answer's   |
// |                 | rewriteToken until it says done (large objects across locations)       |
// | ListPage        | GET /storage/v1/b/B/o?prefix=&delimiter=&pageToken=&maxResults=          |
//
// Object names are percent-encoded in paths ('/' included), as the API requires.
//
// Endpoint: `options.endpoint` when set, else STORAGE_EMULATOR_HOST (with or without a scheme;
// http:// is assumed without one), else https://storage.googleapis.com. With the emulator
// variable set no token is sent, as Google's own SDKs do; otherwise every request carries the
// credentials' bearer token (scope devstorage.read_write).
//
// Retries follow the project's HTTP policy (RetryPolicy defaults: 429 and 5xx, connection
// failures, exponential backoff). A resumable chunk is never blindly re-sent: its retry is the
// status query above, at most `max_resumes` times per upload.
//
// Thread-safety: every call may be made from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"
#include "bizon/value.h"
#include "google/credentials.h"
#include "http/http_session.h"

namespace bizon {

inline constexpr std::string_view kGcsProductionEndpoint = "https://storage.googleapis.com";
inline constexpr std::string_view kGcsReadWriteScope =
    "https://www.googleapis.com/auth/devstorage.read_write";
/// Resumable chunks (all but the last) must be multiples of this many bytes.
inline constexpr int64_t kGcsChunkQuantum = int64_t{256} * 1024;

struct GcsObject {
  std::string bucket;
  std::string name;
  int64_t size = 0;
  std::string generation;
  std::string content_type;
  std::string md5_hash;
  std::string crc32c;
  /// RFC 3339, as the API sends it.
  std::string updated;

  /// Reads an object resource (the JSON the API answers uploads and gets with).
  static Result<GcsObject> FromJson(std::string_view json);
};

struct GcsListOptions {
  std::string prefix;
  /// "/" lists one level: deeper names are folded into `prefixes`.
  std::string delimiter;
  std::string page_token;
  /// 0 leaves the page size to the server (1000 on GCS).
  int max_results = 0;
};

struct GcsListPage {
  std::vector<GcsObject> objects;
  std::vector<std::string> prefixes;
  /// Empty on the last page.
  std::string next_page_token;
};

/// Where a resumable upload stands, as the server says.
struct GcsUploadStatus {
  /// Bytes the server has persisted: the offset the next chunk starts at.
  int64_t persisted = 0;
  /// Set once the upload is complete.
  std::optional<GcsObject> object;
};

/// The bytes of an upload, read chunk by chunk (a resumable upload never holds more than one
/// chunk in memory).
class GcsUploadSource {
 public:
  virtual ~GcsUploadSource() = default;
  virtual int64_t size() const = 0;
  /// `length` bytes from `offset` (fewer only at the end).
  virtual Result<std::string> Read(int64_t offset, int64_t length) = 0;
};

/// Bytes in memory; `data` must outlive the source.
std::unique_ptr<GcsUploadSource> MakeGcsMemorySource(std::string_view data);
/// A file's bytes. A missing or unreadable file is kNotFound / kFailedPrecondition naming it.
Result<std::unique_ptr<GcsUploadSource>> MakeGcsFileSource(const std::string& path);

struct GcsClientOptions {
  /// Used unless the endpoint is the emulator's; null: Application Default Credentials (scope
  /// devstorage.read_write), made by Make().
  std::shared_ptr<GoogleCredentials> credentials;
  /// scheme://host[:port]; empty: STORAGE_EMULATOR_HOST, else production.
  std::string endpoint;
  /// Uploads of at least this many bytes are resumable.
  int64_t resumable_threshold = int64_t{8} * 1024 * 1024;
  /// Bytes per resumable chunk, a multiple of kGcsChunkQuantum.
  int64_t chunk_size = int64_t{8} * 1024 * 1024;
  /// Status queries (each followed by a continuation) one resumable upload may need.
  int max_resumes = 10;
  HttpTimeouts timeouts = {.connect_s = 10, .read_s = 120};
  RetryPolicy retries = RetryPolicy{.allowed_methods = {"GET", "POST", "DELETE"}};
  HttpSleepFunction sleep = ScaledSleep;
  /// Default: getenv.
  GoogleEnvFunction env;
};

class GcsClient {
 public:
  /// A chunk size that is not a positive multiple of kGcsChunkQuantum, or an unusable endpoint,
  /// is kInvalidArgument.
  static Result<std::unique_ptr<GcsClient>> Make(GcsClientOptions options);

  /// Where requests go, e.g. "http://127.0.0.1:9023" (no trailing slash).
  const std::string& endpoint() const { return endpoint_; }
  /// True when the endpoint came from STORAGE_EMULATOR_HOST (no token is sent).
  bool emulator() const { return emulator_; }

  /// Uploads `data` as bucket/name, multipart or resumable by size.
  Result<GcsObject> Upload(std::string_view bucket, std::string_view name, std::string_view data,
                           std::string_view content_type = "application/octet-stream");
  /// Uploads a file's bytes, multipart or resumable by size.
  Result<GcsObject> UploadFile(std::string_view bucket, std::string_view name,
                               const std::string& path,
                               std::string_view content_type = "application/octet-stream");
  /// One multipart request, whatever the size.
  Result<GcsObject> UploadMultipart(std::string_view bucket, std::string_view name,
                                    std::string_view data, std::string_view content_type);

  /// Opens a resumable upload of `size` bytes; returns its session URI. The URI is enough to
  /// continue the upload later (another process, after a crash), for about a week; it is a
  /// credential in itself, so it goes to the SecretMask.
  Result<std::string> StartResumableUpload(std::string_view bucket, std::string_view name,
                                           int64_t size, std::string_view content_type);
  /// Asks where the upload stands. An expired or cancelled session (404, 410) is kNotFound.
  Result<GcsUploadStatus> QueryResumableUpload(const std::string& session_uri, int64_t size);
  /// Sends `source` from the offset the server reports, chunk by chunk, until it is complete.
  Result<GcsObject> ResumeUpload(const std::string& session_uri, GcsUploadSource& source);
  /// StartResumableUpload then ResumeUpload.
  Result<GcsObject> UploadResumable(std::string_view bucket, std::string_view name,
                                    GcsUploadSource& source, std::string_view content_type);

  /// The object's bytes. A missing object is kNotFound.
  Result<std::string> Download(std::string_view bucket, std::string_view name);
  /// The object's metadata. A missing object is kNotFound.
  Result<GcsObject> GetObject(std::string_view bucket, std::string_view name);
  /// A missing object is kNotFound.
  Status Delete(std::string_view bucket, std::string_view name);
  /// Server-side copy of bucket/name to to_bucket/to_name (replacing it), through objects.rewrite
  /// (which, unlike copyTo, may take several calls: each answer carries a token to continue
  /// with). A missing source is kNotFound.
  Result<GcsObject> Copy(std::string_view bucket, std::string_view name, std::string_view to_bucket,
                         std::string_view to_name);
  /// One page of the bucket's objects.
  Result<GcsListPage> ListPage(std::string_view bucket, const GcsListOptions& options);
  /// Every object under `prefix`, following pageToken across pages.
  Result<std::vector<GcsObject>> List(std::string_view bucket, std::string_view prefix = "",
                                      int page_size = 0);

  /// Creates a bucket in `project` (tests and tooling; GCS buckets are usually made by hand).
  /// An existing bucket is ok when `exists_ok`.
  Status CreateBucket(std::string_view project, std::string_view bucket, bool exists_ok = true);

 private:
  GcsClient(GcsClientOptions options, std::string endpoint, bool emulator);

  Result<HttpResponse> Send(const HttpRequest& request, HttpSession* session = nullptr);
  std::string ObjectUrl(std::string_view bucket, std::string_view name) const;
  /// The chunks of `source` from the persisted offset (asked first when `query_first`).
  Result<GcsObject> SendChunks(const std::string& session_uri, GcsUploadSource& source,
                               bool query_first);
  Result<GcsUploadStatus> ReadUploadStatus(const std::string& session_uri,
                                           const HttpResponse& response);

  GcsClientOptions options_;
  std::string endpoint_;
  bool emulator_ = false;
  std::unique_ptr<HttpSession> session_;
  // Resumable sessions, every request on a new connection (see the .cc).
  std::unique_ptr<HttpSession> upload_session_;
};

/// The endpoint `STORAGE_EMULATOR_HOST` names, with http:// added when it has no scheme and
/// trailing slashes removed; nullopt when it is unset or empty.
std::optional<std::string> GcsEmulatorEndpoint(const GoogleEnvFunction& env);

}  // namespace bizon
