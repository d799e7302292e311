// BigQueryWriteClient: the BigQuery Storage Write API v1 over gRPC (Debian's grpc++ 1.51), with
// C++ generated at build time from the googleapis protos. This header includes neither gRPC nor
// protobuf: rows travel as serialized protobuf messages (ProtoRowEncoder makes them) and the
// writer schema as a serialized DescriptorProto (ProtoRowSchema::descriptor()).
//
// | call                    | RPC                                                       |
// |-------------------------|-----------------------------------------------------------|
// | CreateWriteStream       | CreateWriteStream(parent = table, type COMMITTED/PENDING) |
// | GetWriteStream          | GetWriteStream(name, view FULL): the table schema         |
// | FinalizeWriteStream     | FinalizeWriteStream(name): the stream's row count         |
// | BatchCommitWriteStreams | BatchCommitWriteStreams(parent = table, streams)          |
// | OpenAppendStream        | one long-lived bidi AppendRows call per write stream      |
//
// Channel: `options.endpoint` (host:port) when set, else BIGQUERY_STORAGE_EMULATOR_HOST (an
// http:// in front is dropped): plaintext, no credentials. Otherwise
// bigquerystorage.googleapis.com:443 over TLS, each call carrying the bearer token of the given
// GoogleCredentials (or Application Default Credentials with the bigquery scope) through a
// gRPC metadata plugin: the same token cache as the REST client when they share credentials.
// Every call sends `x-goog-request-params` (the routing header: `parent=` or `write_stream=`,
// or `name=`), which BigQuery needs and the emulator ignores.
//
// Appends (AppendStream): requests carry `write_stream` every time (the emulator drops a request
// without it), the writer schema on the first request of each connection, and on an explicit
// (COMMITTED or PENDING) stream the offset of their first row. At most `max_inflight` requests
// are unacknowledged: a further append first reads responses. Responses come back in request
// order; each one acknowledges its request. A connection that fails with UNAVAILABLE,
// DEADLINE_EXCEEDED, INTERNAL, RESOURCE_EXHAUSTED or ABORTED (as the call's status, or as a
// response's `error`) is reopened after a backoff and every unacknowledged request is sent again,
// `max_attempts` times in all. On an explicit stream this is exactly-once: an offset that was
// written before answers ALREADY_EXISTS, which counts as success. On the default stream a resent
// request may be written twice (at-least-once: the default stream has no offsets).
//
// Errors carry failure class destination and never a token: a response's `error` or
// `row_errors` (BigQuery's per-row validation: the index within the caller's Append, and the
// message, which names the column) fail the stream; OUT_OF_RANGE (an offset past the end of the
// stream) is kFailedPrecondition; NOT_FOUND kNotFound; INVALID_ARGUMENT kInvalidArgument;
// retryable codes once the attempts are used up kUnavailable; the rest kFailedPrecondition.
//
// Thread-safety: the client's calls may be made from several threads; an AppendStream belongs
// to one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"
#include "google/bigquery_client.h"
#include "google/credentials.h"
#include "http/http_session.h"

namespace bizon {

inline constexpr std::string_view kBigQueryStorageProductionEndpoint =
    "bigquerystorage.googleapis.com:443";
inline constexpr std::string_view kBigQueryStorageEmulatorVariable =
    "BIGQUERY_STORAGE_EMULATOR_HOST";
/// BigQuery's cap on one AppendRows request is 10 MiB; requests stay under 9.5 MiB.
inline constexpr size_t kDefaultAppendRequestBytes = 9'961'472;

enum class WriteStreamType {
  /// Rows are visible as soon as their append is acknowledged.
  kCommitted,
  /// Rows are invisible until the stream is finalized and committed (BatchCommitWriteStreams).
  kPending,
};

struct WriteStreamInfo {
  /// projects/P/datasets/D/tables/T/streams/S
  std::string name;
  WriteStreamType type = WriteStreamType::kCommitted;
  /// The table's schema (GetWriteStream and CreateWriteStream answer it); Storage API type
  /// names (INT64, DOUBLE, STRUCT, ...), which ProtoRowSchema reads.
  BigQuerySchema table_schema;
  /// When a PENDING stream was committed (microseconds since the epoch); 0: not committed.
  int64_t commit_time_us = 0;
};

struct BatchCommitResult {
  /// Microseconds since the epoch.
  int64_t commit_time_us = 0;
};

struct AppendStreamOptions {
  /// Send offsets (explicit COMMITTED/PENDING streams only; never on `_default`).
  bool offsets = false;
  /// The offset of the first row this AppendStream sends: the rows the stream already holds
  /// (0 for a new stream; a resumed writer's count).
  int64_t first_offset = 0;
  /// Most rows in one request (bq_max_rows_per_request); 0: the size limit only.
  size_t max_rows_per_request = 0;
};

/// One row BigQuery refused (AppendRowsResponse.row_errors): the row's index among every row
/// given to the stream's Append calls, in order (oversized ones included: see rows_given()), and
/// BigQuery's message, which names the field and the reason.
struct AppendRowError {
  size_t row = 0;
  std::string message;
};

/// What one Append did with the rows it was given.
struct AppendResult {
  /// Indices (into the rows given) of rows too large for any request: they were not sent, and
  /// take up no offset. The caller writes them another way (a load job).
  std::vector<size_t> oversized_rows;
};

struct BigQueryWriteClientOptions {
  /// Used on the production endpoint only; null: Application Default Credentials with the
  /// bigquery scope, made by Make().
  std::shared_ptr<GoogleCredentials> credentials;
  /// host:port, plaintext and no credentials; empty: BIGQUERY_STORAGE_EMULATOR_HOST, else
  /// production over TLS.
  std::string endpoint;
  /// AppendRows requests sent and not yet acknowledged, at most.
  int max_inflight = 4;
  /// The size one AppendRows request may reach (rows, schema, stream name and framing).
  size_t max_request_bytes = kDefaultAppendRequestBytes;
  /// Attempts of a call (unary, or one append connection) on retryable codes, the first included.
  int max_attempts = 5;
  /// Backoff between attempts: the first wait, doubled each time up to the cap.
  double backoff_initial_s = 1;
  double backoff_max_s = 32;
  /// Deadline of each unary call.
  double call_timeout_s = 60;
  /// Deadline of each AppendRows connection (0: none): a server that stops answering fails the
  /// connection with DEADLINE_EXCEEDED, which is retried like the other retryable codes, instead
  /// of blocking forever. An AppendStream used longer than this reconnects.
  double append_timeout_s = 600;
  HttpSleepFunction sleep = ScaledSleep;
  /// Default: getenv.
  GoogleEnvFunction env;
};

class AppendStream;

class BigQueryWriteClient {
 public:
  /// Opens the channel (lazily: nothing is sent yet). Credentials that cannot be made are their
  /// error.
  static Result<std::unique_ptr<BigQueryWriteClient>> Make(BigQueryWriteClientOptions options);
  ~BigQueryWriteClient();

  /// host:port the channel talks to.
  const std::string& endpoint() const;
  /// True for a plaintext channel without credentials (emulator or explicit endpoint).
  bool plaintext() const;

  /// "projects/P/datasets/D/tables/T".
  static std::string TableName(const BigQueryTableRef& table);
  /// "projects/P/datasets/D/tables/T/streams/_default", the form BigQuery documents (and the
  /// only one the emulator accepts).
  static std::string DefaultStreamName(const BigQueryTableRef& table);

  Result<WriteStreamInfo> CreateWriteStream(const BigQueryTableRef& table, WriteStreamType type);
  /// The stream with the table schema (view FULL); `_default` streams too.
  Result<WriteStreamInfo> GetWriteStream(std::string_view name);
  /// Ends an explicit stream: no more appends. Its row count.
  Result<int64_t> FinalizeWriteStream(std::string_view name);
  /// Commits finalized PENDING streams of `table` atomically. A stream error (not finalized,
  /// already committed, ...) is kFailedPrecondition naming the stream.
  Result<BatchCommitResult> BatchCommitWriteStreams(const BigQueryTableRef& table,
                                                    const std::vector<std::string>& streams);

  /// Opens one AppendRows call on `write_stream` with `writer_schema` (a serialized
  /// DescriptorProto, ProtoRowSchema::descriptor()).
  Result<std::unique_ptr<AppendStream>> OpenAppendStream(std::string write_stream,
                                                         std::string writer_schema,
                                                         AppendStreamOptions stream_options = {});

  struct Impl;

 private:
  explicit BigQueryWriteClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One long-lived AppendRows call (see the header comment). Close() it: destroying an open
/// stream cancels the call, and rows not yet acknowledged may or may not be written.
class AppendStream {
 public:
  ~AppendStream();
  AppendStream(const AppendStream&) = delete;
  AppendStream& operator=(const AppendStream&) = delete;

  /// Sends `rows` (serialized protobuf rows) in requests under the size limit, waiting for
  /// acknowledgements while `max_inflight` requests are out. Returns once they are sent, not
  /// acknowledged: Flush() waits for that. The first failure is returned here or by a later
  /// call, and every call after it returns it too.
  Result<AppendResult> Append(const std::vector<std::string>& rows);
  /// Waits until every request sent is acknowledged.
  Status Flush();
  /// Flush(), then ends the call.
  Status Close();

  /// The offset the next row will take (explicit streams), i.e. first_offset + rows sent.
  int64_t next_offset() const;
  /// Connections opened so far (1 without a reconnect).
  int connections() const;
  /// Rows given to Append so far, oversized ones included: what AppendRowError::row counts from.
  size_t rows_given() const;
  /// The row errors of the response that failed the stream (empty unless row errors did). No row
  /// of that request was written.
  const std::vector<AppendRowError>& row_errors() const;

  struct Impl;

 private:
  friend class BigQueryWriteClient;
  explicit AppendStream(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The host:port BIGQUERY_STORAGE_EMULATOR_HOST names (an http:// prefix and trailing slashes
/// dropped); nullopt when unset or empty.
std::optional<std::string> BigQueryStorageEmulatorEndpoint(const GoogleEnvFunction& env);

}  // namespace bizon
