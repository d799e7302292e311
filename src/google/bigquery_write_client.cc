#include "google/bigquery_write_client.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>

#include "google/cloud/bigquery/storage/v1/storage.grpc.pb.h"
#include "google/google_endpoint.h"

namespace bizon {
namespace {

namespace storage = google::cloud::bigquery::storage::v1;

constexpr size_t kRowErrorsQuoted = 3;

std::string_view GrpcCodeName(int code) {
  static constexpr std::array<std::string_view, 17> kNames = {
      "OK",
      "CANCELLED",
      "UNKNOWN",
      "INVALID_ARGUMENT",
      "DEADLINE_EXCEEDED",
      "NOT_FOUND",
      "ALREADY_EXISTS",
      "PERMISSION_DENIED",
      "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION",
      "ABORTED",
      "OUT_OF_RANGE",
      "UNIMPLEMENTED",
      "INTERNAL",
      "UNAVAILABLE",
      "DATA_LOSS",
      "UNAUTHENTICATED",
  };
  if (code < 0 || code >= static_cast<int>(kNames.size())) return "UNKNOWN";
  return kNames[static_cast<size_t>(code)];
}

bool IsRetryable(int code) {
  switch (static_cast<grpc::StatusCode>(code)) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::ABORTED:
      return true;
    default:
      return false;
  }
}

// What the caller should do about a failed call (`code`, a gRPC code), with Google's message.
Status StorageError(std::string_view what, int code, std::string_view message) {
  StatusCode status_code = StatusCode::kFailedPrecondition;
  switch (static_cast<grpc::StatusCode>(code)) {
    case grpc::StatusCode::NOT_FOUND:
      status_code = StatusCode::kNotFound;
      break;
    case grpc::StatusCode::INVALID_ARGUMENT:
      status_code = StatusCode::kInvalidArgument;
      break;
    case grpc::StatusCode::ALREADY_EXISTS:
      status_code = StatusCode::kAborted;
      break;
    default:
      if (IsRetryable(code)) status_code = StatusCode::kUnavailable;
      break;
  }
  return Status(status_code,
                fmt::format("BigQuery Storage Write API {} failed: {}: {}", what,
                            GrpcCodeName(code), message),
                FailureClass::kDestination);
}

// The routing header's value: percent-encoded except unreserved characters and '/', as Google's
// clients write it.
std::string RoutingParam(std::string_view key, std::string_view value) {
  std::string out(key);
  out.push_back('=');
  for (char c : value) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '_' || c == '.' || c == '~' || c == '/';
    if (keep) {
      out.push_back(c);
    } else {
      out.append(fmt::format("%{:02X}", static_cast<unsigned char>(c)));
    }
  }
  return out;
}

// The bearer token of GoogleCredentials on every call: one token cache with the REST clients.
class CredentialsPlugin final : public grpc::MetadataCredentialsPlugin {
 public:
  explicit CredentialsPlugin(std::shared_ptr<GoogleCredentials> credentials)
      : credentials_(std::move(credentials)) {}

  bool IsBlocking() const override { return true; }
  const char* GetType() const override { return "bizon-google-credentials"; }

  grpc::Status GetMetadata(grpc::string_ref /*service_url*/, grpc::string_ref /*method_name*/,
                           const grpc::AuthContext& /*channel_auth_context*/,
                           std::multimap<grpc::string, grpc::string>* metadata) override {
    Result<std::string> token = credentials_->AccessToken();
    if (!token) {
      // The credentials' messages never quote a token or a key.
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, token.error().message());
    }
    if (!token->empty()) metadata->emplace("authorization", "Bearer " + *token);
    return grpc::Status::OK;
  }

 private:
  std::shared_ptr<GoogleCredentials> credentials_;
};

BigQuerySchema SchemaFromProto(
    const google::protobuf::RepeatedPtrField<storage::TableFieldSchema>& fields) {
  BigQuerySchema schema;
  schema.reserve(static_cast<size_t>(fields.size()));
  for (const storage::TableFieldSchema& field : fields) {
    BigQueryField column;
    column.name = field.name();
    column.type = storage::TableFieldSchema::Type_Name(field.type());
    column.mode = field.mode() == storage::TableFieldSchema::MODE_UNSPECIFIED
                      ? "NULLABLE"
                      : storage::TableFieldSchema::Mode_Name(field.mode());
    column.description = field.description();
    column.fields = SchemaFromProto(field.fields());
    schema.push_back(std::move(column));
  }
  return schema;
}

WriteStreamInfo StreamInfoFromProto(const storage::WriteStream& stream) {
  WriteStreamInfo info;
  info.name = stream.name();
  info.type = stream.type() == storage::WriteStream::PENDING ? WriteStreamType::kPending
                                                             : WriteStreamType::kCommitted;
  info.table_schema = SchemaFromProto(stream.table_schema().fields());
  if (stream.has_commit_time()) {
    info.commit_time_us =
        stream.commit_time().seconds() * 1'000'000 + stream.commit_time().nanos() / 1000;
  }
  return info;
}

size_t VarintLength(uint64_t value) {
  size_t length = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++length;
  }
  return length;
}

}  // namespace

// --- Client --------------------------------------------------------------------------------------

struct BigQueryWriteClient::Impl {
  BigQueryWriteClientOptions options;
  std::string endpoint;
  bool plaintext = false;
  std::shared_ptr<GoogleCredentials> credentials;  // Null on a plaintext channel.
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<storage::BigQueryWrite::Stub> stub;

  double Backoff(int attempt) const {
    double wait = options.backoff_initial_s;
    for (int i = 1; i < attempt && wait < options.backoff_max_s; ++i) wait *= 2;
    return std::min(wait, options.backoff_max_s);
  }

  void Prepare(grpc::ClientContext& context, const std::string& routing, bool deadline) const {
    context.AddMetadata("x-goog-request-params", routing);
    if (deadline) {
      context.set_deadline(
          std::chrono::system_clock::now() +
          std::chrono::milliseconds(static_cast<int64_t>(options.call_timeout_s * 1000)));
    }
  }

  // Runs a unary call, again on retryable codes (and once after UNAUTHENTICATED, with a fresh
  // token), up to max_attempts.
  template <typename Call>
  Status Unary(std::string_view what, const std::string& routing, Call call) {
    bool refreshed = false;
    for (int attempt = 1;; ++attempt) {
      grpc::ClientContext context;
      Prepare(context, routing, true);
      grpc::Status status = call(context);
      if (status.ok()) return Status::Ok();
      int code = status.error_code();
      bool again = IsRetryable(code);
      if (code == grpc::StatusCode::UNAUTHENTICATED && credentials && !refreshed) {
        refreshed = true;
        again = credentials->Refresh().has_value();
      }
      if (!again || attempt >= options.max_attempts) {
        return StorageError(what, code, status.error_message());
      }
      spdlog::warn("BigQuery Storage Write API {} failed ({}: {}), attempt {} of {}", what,
                   GrpcCodeName(code), status.error_message(), attempt, options.max_attempts);
      options.sleep(Backoff(attempt));
    }
  }
};

BigQueryWriteClient::BigQueryWriteClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BigQueryWriteClient::~BigQueryWriteClient() = default;

std::optional<std::string> BigQueryStorageEmulatorEndpoint(const GoogleEnvFunction& env) {
  std::optional<std::string> endpoint =
      GoogleEmulatorEndpoint(env, std::string(kBigQueryStorageEmulatorVariable));
  if (endpoint && endpoint->starts_with("http://")) endpoint->erase(0, 7);
  return endpoint;
}

Result<std::unique_ptr<BigQueryWriteClient>> BigQueryWriteClient::Make(
    BigQueryWriteClientOptions options) {
  auto impl = std::make_unique<Impl>();
  if (options.max_inflight < 1) options.max_inflight = 1;
  if (options.max_attempts < 1) options.max_attempts = 1;
  if (!options.endpoint.empty()) {
    impl->endpoint = options.endpoint;
    impl->plaintext = true;
  } else if (std::optional<std::string> emulated = BigQueryStorageEmulatorEndpoint(options.env)) {
    impl->endpoint = *emulated;
    impl->plaintext = true;
  } else {
    impl->endpoint = std::string(kBigQueryStorageProductionEndpoint);
  }
  if (impl->endpoint.find("://") != std::string::npos) {
    return Fail(InvalidArgumentError(
        fmt::format("BigQuery Storage endpoint must be host:port, got '{}'", impl->endpoint),
        FailureClass::kDestination));
  }
  std::shared_ptr<grpc::ChannelCredentials> channel_credentials;
  if (impl->plaintext) {
    channel_credentials = grpc::InsecureChannelCredentials();
  } else {
    impl->credentials = options.credentials;
    if (!impl->credentials) {
      BIZON_ASSIGN_OR_RETURN(impl->credentials,
                             MakeGoogleCredentials({.scopes = {std::string(kBigQueryScope)},
                                                    .sleep = options.sleep,
                                                    .env = options.env}));
    }
    channel_credentials = grpc::CompositeChannelCredentials(
        grpc::SslCredentials(grpc::SslCredentialsOptions()),
        grpc::MetadataCredentialsFromPlugin(
            std::make_unique<CredentialsPlugin>(impl->credentials)));
  }
  grpc::ChannelArguments arguments;
  // Requests are up to 10 MiB; answers carry table schemas, which can be large too.
  arguments.SetMaxSendMessageSize(-1);
  arguments.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  impl->channel = grpc::CreateCustomChannel(impl->endpoint, channel_credentials, arguments);
  impl->stub = storage::BigQueryWrite::NewStub(impl->channel);
  impl->options = std::move(options);
  return std::unique_ptr<BigQueryWriteClient>(new BigQueryWriteClient(std::move(impl)));
}

const std::string& BigQueryWriteClient::endpoint() const { return impl_->endpoint; }
bool BigQueryWriteClient::plaintext() const { return impl_->plaintext; }

std::string BigQueryWriteClient::TableName(const BigQueryTableRef& table) {
  return fmt::format("projects/{}/datasets/{}/tables/{}", table.project, table.dataset,
                     table.table);
}

std::string BigQueryWriteClient::DefaultStreamName(const BigQueryTableRef& table) {
  return TableName(table) + "/streams/_default";
}

Result<WriteStreamInfo> BigQueryWriteClient::CreateWriteStream(const BigQueryTableRef& table,
                                                               WriteStreamType type) {
  storage::CreateWriteStreamRequest request;
  request.set_parent(TableName(table));
  request.mutable_write_stream()->set_type(type == WriteStreamType::kPending
                                               ? storage::WriteStream::PENDING
                                               : storage::WriteStream::COMMITTED);
  storage::WriteStream response;
  BIZON_RETURN_IF_ERROR(
      impl_->Unary(fmt::format("CreateWriteStream for {}", request.parent()),
                   RoutingParam("parent", request.parent()), [&](grpc::ClientContext& context) {
                     return impl_->stub->CreateWriteStream(&context, request, &response);
                   }));
  return StreamInfoFromProto(response);
}

Result<WriteStreamInfo> BigQueryWriteClient::GetWriteStream(std::string_view name) {
  storage::GetWriteStreamRequest request;
  request.set_name(std::string(name));
  request.set_view(storage::WriteStreamView::FULL);
  storage::WriteStream response;
  BIZON_RETURN_IF_ERROR(impl_->Unary(fmt::format("GetWriteStream for {}", name),
                                     RoutingParam("name", name), [&](grpc::ClientContext& context) {
                                       return impl_->stub->GetWriteStream(&context, request,
                                                                          &response);
                                     }));
  return StreamInfoFromProto(response);
}

Result<int64_t> BigQueryWriteClient::FinalizeWriteStream(std::string_view name) {
  storage::FinalizeWriteStreamRequest request;
  request.set_name(std::string(name));
  storage::FinalizeWriteStreamResponse response;
  BIZON_RETURN_IF_ERROR(impl_->Unary(fmt::format("FinalizeWriteStream for {}", name),
                                     RoutingParam("name", name), [&](grpc::ClientContext& context) {
                                       return impl_->stub->FinalizeWriteStream(&context, request,
                                                                               &response);
                                     }));
  return response.row_count();
}

Result<BatchCommitResult> BigQueryWriteClient::BatchCommitWriteStreams(
    const BigQueryTableRef& table, const std::vector<std::string>& streams) {
  storage::BatchCommitWriteStreamsRequest request;
  request.set_parent(TableName(table));
  for (const std::string& stream : streams) request.add_write_streams(stream);
  storage::BatchCommitWriteStreamsResponse response;
  BIZON_RETURN_IF_ERROR(
      impl_->Unary(fmt::format("BatchCommitWriteStreams for {}", request.parent()),
                   RoutingParam("parent", request.parent()), [&](grpc::ClientContext& context) {
                     return impl_->stub->BatchCommitWriteStreams(&context, request, &response);
                   }));
  if (response.stream_errors_size() > 0) {
    std::vector<std::string> errors;
    for (const storage::StorageError& error : response.stream_errors()) {
      errors.push_back(fmt::format("{} ({}): {}", error.entity(),
                                   storage::StorageError::StorageErrorCode_Name(error.code()),
                                   error.error_message()));
    }
    return Fail(FailedPreconditionError(
        fmt::format("BigQuery Storage Write API BatchCommitWriteStreams for {} committed nothing: "
                    "{}",
                    request.parent(), fmt::join(errors, "; ")),
        FailureClass::kDestination));
  }
  return BatchCommitResult{.commit_time_us = response.commit_time().seconds() * 1'000'000 +
                                             response.commit_time().nanos() / 1000};
}

// --- AppendStream --------------------------------------------------------------------------------

struct AppendStream::Impl {
  struct Pending {
    storage::AppendRowsRequest request;
    int64_t offset = 0;
    /// Index, among every row given to the stream's Append calls, of each row of the request.
    std::vector<size_t> row_indices;
  };

  BigQueryWriteClient::Impl* client = nullptr;
  std::string write_stream;
  std::string writer_schema;
  AppendStreamOptions stream_options;
  std::string routing;

  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientReaderWriter<storage::AppendRowsRequest, storage::AppendRowsResponse>>
      call;
  bool schema_sent = false;  // On this connection.
  std::deque<Pending> unacked;
  int64_t next_offset = 0;
  size_t rows_given = 0;
  int connections = 0;
  int failures = 0;  // Reconnects since the last acknowledgement.
  bool refreshed = false;
  bool closed = false;
  Status failed;
  std::vector<AppendRowError> row_errors;

  void Connect() {
    context = std::make_unique<grpc::ClientContext>();
    client->Prepare(*context, routing, false);
    if (client->options.append_timeout_s > 0) {
      context->set_deadline(
          std::chrono::system_clock::now() +
          std::chrono::milliseconds(static_cast<int64_t>(client->options.append_timeout_s * 1000)));
    }
    call = client->stub->AppendRows(context.get());
    schema_sent = false;
    ++connections;
  }

  bool Write(Pending& pending) {
    storage::AppendRowsRequest::ProtoData* data = pending.request.mutable_proto_rows();
    bool with_schema = !schema_sent;
    if (with_schema) {
      data->mutable_writer_schema()->mutable_proto_descriptor()->ParseFromString(writer_schema);
    }
    bool ok = call->Write(pending.request);
    if (with_schema) data->clear_writer_schema();
    schema_sent = true;
    return ok;
  }

  Status FailWith(Status status) {
    failed = std::move(status);
    if (call) {
      context->TryCancel();
      call->Finish().ok();  // The call was cancelled on purpose: its status says only that.
      call.reset();
    }
    return failed;
  }

  // The connection broke (`code`, `message`): reconnect and send every unacknowledged request
  // again, or fail once the attempts are used up.
  Status Reconnect(int code, std::string message) {
    for (;;) {
      if (call) {
        context->TryCancel();
        call->Finish().ok();  // Cancelled above: the status is CANCELLED, nothing to learn.
        call.reset();
      }
      bool again = IsRetryable(code);
      if (code == grpc::StatusCode::UNAUTHENTICATED && client->credentials && !refreshed) {
        refreshed = true;
        again = client->credentials->Refresh().has_value();
      }
      ++failures;
      if (!again || failures >= client->options.max_attempts) {
        return FailWith(StorageError(fmt::format("AppendRows on {}", write_stream), code, message));
      }
      spdlog::warn(
          "BigQuery Storage Write API AppendRows on {} failed ({}: {}); reconnecting and "
          "sending {} unacknowledged request(s) again, attempt {} of {}",
          write_stream, GrpcCodeName(code), message, unacked.size(), failures + 1,
          client->options.max_attempts);
      client->options.sleep(client->Backoff(failures));
      Connect();
      bool written = true;
      for (Pending& pending : unacked) {
        if (!Write(pending)) {
          written = false;
          break;
        }
      }
      if (written) return Status::Ok();
      grpc::Status status = call->Finish();
      call.reset();
      code = status.ok() ? grpc::StatusCode::UNAVAILABLE : status.error_code();
      message = status.ok() ? std::string("the server ended the call") : status.error_message();
    }
  }

  // The call's status after a failed Read or Write.
  Status Broken() {
    grpc::Status status = call->Finish();
    call.reset();
    if (status.ok()) {
      return Reconnect(grpc::StatusCode::UNAVAILABLE,
                       "the server ended the call with requests unacknowledged");
    }
    return Reconnect(status.error_code(), status.error_message());
  }

  Status Send(Pending pending) {
    if (!call) Connect();
    unacked.push_back(std::move(pending));
    if (Write(unacked.back())) return Status::Ok();
    return Broken();
  }

  std::string RowErrors(const storage::AppendRowsResponse& response, const Pending& pending) {
    std::vector<std::string> parts;
    for (const storage::RowError& error : response.row_errors()) {
      if (parts.size() == kRowErrorsQuoted) break;
      size_t index = static_cast<size_t>(error.index());
      std::string row = index < pending.row_indices.size()
                            ? fmt::format("row {}", pending.row_indices[index])
                            : fmt::format("row {} of the request", error.index());
      parts.push_back(fmt::format("{}: {}", row, error.message()));
    }
    std::string more;
    if (static_cast<size_t>(response.row_errors_size()) > parts.size()) {
      more = fmt::format(" (and {} more)", response.row_errors_size() - parts.size());
    }
    return fmt::format("{}{}", fmt::join(parts, "; "), more);
  }

  // Reads one response and settles the oldest unacknowledged request with it.
  Status ReadOne() {
    storage::AppendRowsResponse response;
    if (!call->Read(&response)) return Broken();
    if (unacked.empty()) {
      return FailWith(InternalError(fmt::format(
          "BigQuery Storage Write API answered more AppendRows requests on {} than were sent",
          write_stream)));
    }
    const Pending& pending = unacked.front();
    std::string where = stream_options.offsets ? fmt::format(" at offset {}", pending.offset) : "";
    if (response.row_errors_size() > 0) {
      for (const storage::RowError& error : response.row_errors()) {
        size_t index = static_cast<size_t>(error.index());
        row_errors.push_back(
            {.row = index < pending.row_indices.size() ? pending.row_indices[index] : index,
             .message = error.message()});
      }
      return FailWith(InvalidArgumentError(
          fmt::format("BigQuery Storage Write API refused rows appended to {}{}: {}", write_stream,
                      where, RowErrors(response, pending)),
          FailureClass::kDestination));
    }
    if (response.has_error()) {
      int code = response.error().code();
      if (code == grpc::StatusCode::ALREADY_EXISTS && stream_options.offsets) {
        // The rows at this offset were written before (a resend, a resumed writer): done.
        spdlog::debug(
            "BigQuery Storage Write API: rows at offset {} of {} were written before ({})",
            pending.offset, write_stream, response.error().message());
        unacked.pop_front();
        failures = 0;
        return Status::Ok();
      }
      if (IsRetryable(code)) return Reconnect(code, response.error().message());
      return FailWith(StorageError(fmt::format("AppendRows on {}{}", write_stream, where), code,
                                   response.error().message()));
    }
    unacked.pop_front();
    failures = 0;
    return Status::Ok();
  }
};

AppendStream::AppendStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AppendStream::~AppendStream() {
  if (impl_->call) {
    impl_->context->TryCancel();
    impl_->call->Finish().ok();  // Abandoned without Close(): cancelled, as documented.
  }
}

Result<std::unique_ptr<AppendStream>> BigQueryWriteClient::OpenAppendStream(
    std::string write_stream, std::string writer_schema, AppendStreamOptions stream_options) {
  if (write_stream.empty()) {
    return Fail(
        InvalidArgumentError("AppendRows needs a write stream name", FailureClass::kDestination));
  }
  if (stream_options.offsets && write_stream.ends_with("/_default")) {
    return Fail(
        InvalidArgumentError(fmt::format("the default stream takes no offsets: {}", write_stream),
                             FailureClass::kDestination));
  }
  auto impl = std::make_unique<AppendStream::Impl>();
  impl->client = impl_.get();
  impl->routing = RoutingParam("write_stream", write_stream);
  impl->write_stream = std::move(write_stream);
  impl->writer_schema = std::move(writer_schema);
  impl->stream_options = stream_options;
  impl->next_offset = stream_options.first_offset;
  return std::unique_ptr<AppendStream>(new AppendStream(std::move(impl)));
}

Result<AppendResult> AppendStream::Append(const std::vector<std::string>& rows) {
  Impl& stream = *impl_;
  if (!stream.failed.ok()) return Fail(stream.failed);
  if (stream.closed) {
    return Fail(
        FailedPreconditionError(fmt::format("AppendStream on {} is closed", stream.write_stream),
                                FailureClass::kDestination));
  }
  const BigQueryWriteClientOptions& options = stream.client->options;
  const size_t base = stream.rows_given;
  stream.rows_given += rows.size();
  // Everything of a request but its rows: stream name, schema, offset, framing.
  const size_t fixed = stream.write_stream.size() + stream.writer_schema.size() + 64;
  AppendResult result;
  Impl::Pending pending;
  size_t pending_bytes = fixed;
  auto flush_pending = [&]() -> Status {
    if (pending.row_indices.empty()) return Status::Ok();
    while (stream.unacked.size() >= static_cast<size_t>(options.max_inflight)) {
      BIZON_RETURN_IF_ERROR(stream.ReadOne());
    }
    pending.request.set_write_stream(stream.write_stream);
    pending.offset = stream.next_offset;
    if (stream.stream_options.offsets) pending.request.mutable_offset()->set_value(pending.offset);
    stream.next_offset += static_cast<int64_t>(pending.row_indices.size());
    BIZON_RETURN_IF_ERROR(stream.Send(std::move(pending)));
    pending = Impl::Pending();
    pending_bytes = fixed;
    return Status::Ok();
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t cost = rows[i].size() + 1 + VarintLength(rows[i].size());
    if (fixed + cost > options.max_request_bytes) {
      result.oversized_rows.push_back(i);
      continue;
    }
    if (pending_bytes + cost > options.max_request_bytes ||
        (stream.stream_options.max_rows_per_request > 0 &&
         pending.row_indices.size() >= stream.stream_options.max_rows_per_request)) {
      BIZON_RETURN_IF_ERROR(flush_pending());
    }
    pending.request.mutable_proto_rows()->mutable_rows()->add_serialized_rows(rows[i]);
    pending.row_indices.push_back(base + i);
    pending_bytes += cost;
  }
  BIZON_RETURN_IF_ERROR(flush_pending());
  return result;
}

Status AppendStream::Flush() {
  Impl& stream = *impl_;
  if (!stream.failed.ok()) return stream.failed;
  while (!stream.unacked.empty()) BIZON_RETURN_IF_ERROR(stream.ReadOne());
  return Status::Ok();
}

Status AppendStream::Close() {
  Impl& stream = *impl_;
  if (stream.closed) return stream.failed;
  BIZON_RETURN_IF_ERROR(Flush());
  stream.closed = true;
  if (!stream.call) return Status::Ok();
  stream.call->WritesDone();
  grpc::Status status = stream.call->Finish();
  stream.call.reset();
  if (!status.ok() && status.error_code() != grpc::StatusCode::CANCELLED) {
    // Every request was acknowledged; a failure while ending the call loses nothing.
    spdlog::debug("BigQuery Storage Write API AppendRows on {} ended with {}: {}",
                  stream.write_stream, GrpcCodeName(status.error_code()), status.error_message());
  }
  return Status::Ok();
}

int64_t AppendStream::next_offset() const { return impl_->next_offset; }
int AppendStream::connections() const { return impl_->connections; }
size_t AppendStream::rows_given() const { return impl_->rows_given; }
const std::vector<AppendRowError>& AppendStream::row_errors() const { return impl_->row_errors; }

}  // namespace bizon
