#include "fakes/fake_bigquery_write.h"

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <charconv>
#include <chrono>
#include <optional>
#include <thread>

#include "google/cloud/bigquery/storage/v1/storage.grpc.pb.h"

namespace bizon::testing_support {
namespace {

namespace storage = google::cloud::bigquery::storage::v1;

namespace pb = google::protobuf;

struct Stream {
  storage::WriteStream::Type type = storage::WriteStream::COMMITTED;
  std::vector<std::string> rows;
  bool finalized = false;
  bool committed = false;
};

constexpr std::string_view kChangeType = "_CHANGE_TYPE";
constexpr std::string_view kChangeSequence = "_CHANGE_SEQUENCE_NUMBER";

/// The row message of an AppendRows call, built from its writer schema.
struct RowType {
  std::unique_ptr<pb::DescriptorPool> pool;
  std::unique_ptr<pb::DynamicMessageFactory> factory;
  const pb::Descriptor* descriptor = nullptr;
  /// The writer schema has _CHANGE_TYPE: the rows are changes.
  bool cdc = false;
};

/// A key's latest change.
struct Change {
  std::vector<uint64_t> sequence;  // Empty: none given.
  bool deleted = false;
  std::string json;  // The row without its pseudo-columns.
};

struct CdcTable {
  std::vector<std::string> key;
  std::map<std::string, Change> rows;
};

/// The sections of a _CHANGE_SEQUENCE_NUMBER, or nullopt when it is not 1 to 4 sections of 1 to
/// 16 hexadecimal digits separated by '/'.
std::optional<std::vector<uint64_t>> ParseSequence(std::string_view text) {
  std::vector<uint64_t> sections;
  while (true) {
    size_t slash = text.find('/');
    std::string_view section = text.substr(0, slash);
    uint64_t value = 0;
    auto [end, error] = std::from_chars(section.data(), section.data() + section.size(), value, 16);
    if (section.empty() || section.size() > 16 || error != std::errc() ||
        end != section.data() + section.size()) {
      return std::nullopt;
    }
    sections.push_back(value);
    if (slash == std::string_view::npos) break;
    text.remove_prefix(slash + 1);
  }
  if (sections.size() > 4) return std::nullopt;
  return sections;
}

}  // namespace

struct FakeBigQueryWrite::Impl final : public storage::BigQueryWrite::Service {
  mutable std::mutex mutex;
  std::vector<std::vector<std::string>> table_schema;
  std::map<std::string, Stream> streams;
  /// PENDING streams, in the order BatchCommitWriteStreams committed them.
  std::vector<std::string> commit_order;
  std::deque<Fault> faults;
  std::vector<std::string> violations;
  std::vector<bool> schema_flags;
  std::vector<std::string> authorizations;
  std::map<std::string, CdcTable> cdc_tables;
  int cdc_changes = 0;
  int append_calls = 0;
  int append_requests = 0;
  int next_stream = 0;
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  // Records an off-contract request; the status BigQuery would answer it with.
  grpc::Status Violation(const std::string& what) {
    violations.push_back(what);
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, what);
  }

  // Checks the routing header against `expected` ("parent=...", "name=..."); records a
  // violation when it is missing or different.
  void CheckRouting(grpc::ServerContext* context, const std::string& expected) {
    const auto& metadata = context->client_metadata();
    auto found = metadata.find("x-goog-request-params");
    if (found == metadata.end()) {
      violations.push_back("missing x-goog-request-params for " + expected);
    } else if (std::string(found->second.data(), found->second.size()) != expected) {
      violations.push_back(fmt::format("x-goog-request-params is '{}', expected '{}'",
                                       std::string(found->second.data(), found->second.size()),
                                       expected));
    }
    auto authorization = metadata.find("authorization");
    if (authorization != metadata.end()) {
      authorizations.emplace_back(authorization->second.data(), authorization->second.size());
    }
  }

  void FillSchema(storage::WriteStream* stream) {
    for (const std::vector<std::string>& column : table_schema) {
      storage::TableFieldSchema* field = stream->mutable_table_schema()->add_fields();
      field->set_name(column.at(0));
      storage::TableFieldSchema::Type type;
      storage::TableFieldSchema::Type_Parse(column.at(1), &type);
      field->set_type(type);
      storage::TableFieldSchema::Mode mode = storage::TableFieldSchema::NULLABLE;
      if (column.size() > 2) storage::TableFieldSchema::Mode_Parse(column[2], &mode);
      field->set_mode(mode);
    }
  }

  Stream* FindStream(const std::string& name) {
    if (name.ends_with("/streams/_default")) return &streams[name];  // Always there.
    auto found = streams.find(name);
    return found == streams.end() ? nullptr : &found->second;
  }

  grpc::Status CreateWriteStream(grpc::ServerContext* context,
                                 const storage::CreateWriteStreamRequest* request,
                                 storage::WriteStream* response) override {
    std::lock_guard lock(mutex);
    CheckRouting(context, "parent=" + request->parent());
    storage::WriteStream::Type type = request->write_stream().type();
    if (type != storage::WriteStream::COMMITTED && type != storage::WriteStream::PENDING) {
      return Violation("CreateWriteStream without a COMMITTED or PENDING type");
    }
    std::string name = fmt::format("{}/streams/fake{}", request->parent(), ++next_stream);
    streams[name].type = type;
    response->set_name(name);
    response->set_type(type);
    FillSchema(response);
    return grpc::Status::OK;
  }

  grpc::Status GetWriteStream(grpc::ServerContext* context,
                              const storage::GetWriteStreamRequest* request,
                              storage::WriteStream* response) override {
    std::lock_guard lock(mutex);
    CheckRouting(context, "name=" + request->name());
    Stream* stream = FindStream(request->name());
    if (stream == nullptr) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "Stream not found: " + request->name());
    }
    response->set_name(request->name());
    response->set_type(stream->type);
    if (stream->committed) {  // WriteStream.commit_time: set once a PENDING stream is committed.
      response->mutable_commit_time()->set_seconds(1704164645);
      response->mutable_commit_time()->set_nanos(123456000);
    }
    if (request->view() == storage::WriteStreamView::FULL) FillSchema(response);
    return grpc::Status::OK;
  }

  grpc::Status FinalizeWriteStream(grpc::ServerContext* context,
                                   const storage::FinalizeWriteStreamRequest* request,
                                   storage::FinalizeWriteStreamResponse* response) override {
    std::lock_guard lock(mutex);
    CheckRouting(context, "name=" + request->name());
    Stream* stream = FindStream(request->name());
    if (stream == nullptr || request->name().ends_with("/_default")) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "Stream not found: " + request->name());
    }
    stream->finalized = true;
    response->set_row_count(static_cast<int64_t>(stream->rows.size()));
    return grpc::Status::OK;
  }

  grpc::Status BatchCommitWriteStreams(
      grpc::ServerContext* context, const storage::BatchCommitWriteStreamsRequest* request,
      storage::BatchCommitWriteStreamsResponse* response) override {
    std::lock_guard lock(mutex);
    CheckRouting(context, "parent=" + request->parent());
    for (const std::string& name : request->write_streams()) {
      Stream* stream = FindStream(name);
      storage::StorageError::StorageErrorCode code =
          storage::StorageError::STORAGE_ERROR_CODE_UNSPECIFIED;
      if (stream == nullptr) {
        code = storage::StorageError::STREAM_NOT_FOUND;
      } else if (stream->type != storage::WriteStream::PENDING) {
        code = storage::StorageError::INVALID_STREAM_TYPE;
      } else if (!stream->finalized) {
        code = storage::StorageError::INVALID_STREAM_STATE;
      } else if (stream->committed) {
        code = storage::StorageError::STREAM_ALREADY_COMMITTED;
      }
      if (code != storage::StorageError::STORAGE_ERROR_CODE_UNSPECIFIED) {
        storage::StorageError* error = response->add_stream_errors();
        error->set_code(code);
        error->set_entity(name);
        error->set_error_message("Stream cannot be committed");
      }
    }
    if (response->stream_errors_size() > 0) return grpc::Status::OK;  // Nothing committed.
    for (const std::string& name : request->write_streams()) {
      FindStream(name)->committed = true;
      commit_order.push_back(name);
    }
    response->mutable_commit_time()->set_seconds(1704164645);
    response->mutable_commit_time()->set_nanos(123456000);
    return grpc::Status::OK;
  }

  /// The row message of `schema` (a writer schema), and whether its rows are changes; a
  /// pseudo-column that is not a string is refused.
  std::optional<grpc::Status> BuildRowType(const storage::ProtoSchema& schema, RowType& type) {
    pb::FileDescriptorProto file;
    file.set_name("writer_schema.proto");
    *file.add_message_type() = schema.proto_descriptor();
    type.pool = std::make_unique<pb::DescriptorPool>();
    const pb::FileDescriptor* built = type.pool->BuildFile(file);
    if (built == nullptr || built->message_type_count() != 1) {
      return Violation("writer_schema is not a self-contained DescriptorProto");
    }
    type.descriptor = built->message_type(0);
    type.factory = std::make_unique<pb::DynamicMessageFactory>(type.pool.get());
    const pb::FieldDescriptor* change = type.descriptor->FindFieldByName(std::string(kChangeType));
    const pb::FieldDescriptor* sequence =
        type.descriptor->FindFieldByName(std::string(kChangeSequence));
    type.cdc = change != nullptr;
    for (const pb::FieldDescriptor* field : {change, sequence}) {
      if (field != nullptr && field->type() != pb::FieldDescriptor::TYPE_STRING) {
        return Violation(fmt::format("{} must be a string field", field->name()));
      }
    }
    if (sequence != nullptr && change == nullptr) {
      return Violation("_CHANGE_SEQUENCE_NUMBER without _CHANGE_TYPE");
    }
    return std::nullopt;
  }

  /// Applies the change rows of `request` to their table (CDC).
  std::optional<grpc::Status> ApplyChanges(const std::string& stream_name, const RowType& type,
                                           const storage::AppendRowsRequest& request) {
    if (!stream_name.ends_with("/streams/_default")) {
      return Violation("CDC rows (_CHANGE_TYPE) on " + stream_name +
                       ": BigQuery applies changes from the default stream only");
    }
    std::string table = stream_name.substr(0, stream_name.size() - 17);
    auto found = cdc_tables.find(table);
    if (found == cdc_tables.end()) {
      return Violation("CDC rows into " + table + ", which has no primary key");
    }
    CdcTable& cdc = found->second;
    for (const std::string& bytes : request.proto_rows().rows().serialized_rows()) {
      std::unique_ptr<pb::Message> row(type.factory->GetPrototype(type.descriptor)->New());
      if (!row->ParseFromString(bytes)) return Violation("a change row does not parse");
      const pb::Reflection* reflection = row->GetReflection();
      auto text = [&](std::string_view name) -> std::optional<std::string> {
        const pb::FieldDescriptor* field = type.descriptor->FindFieldByName(std::string(name));
        if (field == nullptr || !reflection->HasField(*row, field)) return std::nullopt;
        std::string value;
        pb::TextFormat::PrintFieldValueToString(*row, field, -1, &value);
        return value;
      };
      std::string change = text(kChangeType).value_or("");
      if (change != "\"UPSERT\"" && change != "\"DELETE\"") {
        return Violation("_CHANGE_TYPE must be UPSERT or DELETE, not " + change);
      }
      Change applied{.deleted = change == "\"DELETE\""};
      if (const pb::FieldDescriptor* field =
              type.descriptor->FindFieldByName(std::string(kChangeSequence));
          field != nullptr && reflection->HasField(*row, field)) {
        auto sections = ParseSequence(reflection->GetString(*row, field));
        if (!sections) {
          return Violation("malformed _CHANGE_SEQUENCE_NUMBER " +
                           reflection->GetString(*row, field));
        }
        applied.sequence = std::move(*sections);
      }
      std::string key;
      for (const std::string& column : cdc.key) {
        std::optional<std::string> value = text(column);
        if (!value) return Violation("a change without its key column " + column);
        key += *value + "\x1f";
      }
      ++cdc_changes;
      Change& kept = cdc.rows[key];
      // A key keeps its greatest sequence number; without one, the later arrival wins.
      if (!kept.sequence.empty() && !applied.sequence.empty() && applied.sequence < kept.sequence) {
        continue;
      }
      for (std::string_view pseudo : {kChangeType, kChangeSequence}) {
        if (const pb::FieldDescriptor* field =
                type.descriptor->FindFieldByName(std::string(pseudo))) {
          reflection->ClearField(row.get(), field);
        }
      }
      pb::util::JsonPrintOptions options;
      options.preserve_proto_field_names = true;
      (void)pb::util::MessageToJsonString(*row, &applied.json, options);
      kept = std::move(applied);
    }
    return std::nullopt;
  }

  grpc::Status AppendRows(grpc::ServerContext* context,
                          grpc::ServerReaderWriter<storage::AppendRowsResponse,
                                                   storage::AppendRowsRequest>* call) override {
    std::string call_stream;
    bool first = true;
    RowType row_type;
    {
      std::lock_guard lock(mutex);
      ++append_calls;
    }
    storage::AppendRowsRequest request;
    while (call->Read(&request)) {
      storage::AppendRowsResponse response;
      std::unique_lock lock(mutex);
      ++append_requests;
      schema_flags.push_back(request.proto_rows().has_writer_schema());
      if (request.write_stream().empty()) {
        return Violation("AppendRowsRequest without write_stream");
      }
      if (first) {
        CheckRouting(context, "write_stream=" + request.write_stream());
        call_stream = request.write_stream();
        if (!request.proto_rows().has_writer_schema()) {
          return Violation("first AppendRowsRequest of a call without writer_schema");
        }
        first = false;
        if (auto refused = BuildRowType(request.proto_rows().writer_schema(), row_type)) {
          return *refused;
        }
      } else if (request.write_stream() != call_stream) {
        return Violation(fmt::format("AppendRowsRequest for {} on a call opened for {}",
                                     request.write_stream(), call_stream));
      }
      Stream* stream = FindStream(request.write_stream());
      if (stream == nullptr) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND,
                            "Stream not found: " + request.write_stream());
      }
      bool is_default = request.write_stream().ends_with("/streams/_default");
      if (is_default && request.has_offset()) {
        return Violation("offset on the default stream");
      }
      if (!is_default && !request.has_offset()) {
        return Violation("explicit stream appended to without an offset");
      }
      if (!faults.empty() && faults.front().kind == Fault::Kind::kStall) {
        int stall_ms = faults.front().stall_ms;
        faults.pop_front();
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms));
        lock.lock();
      } else if (!faults.empty()) {
        Fault fault = faults.front();
        faults.pop_front();
        if (fault.kind == Fault::Kind::kEndCall) {
          return grpc::Status(static_cast<grpc::StatusCode>(fault.code), fault.message);
        }
        if (fault.kind == Fault::Kind::kResponseError) {
          response.mutable_error()->set_code(fault.code);
          response.mutable_error()->set_message(fault.message);
        } else {
          for (const auto& [index, message] : fault.row_errors) {
            storage::RowError* error = response.add_row_errors();
            error->set_index(index);
            error->set_code(storage::RowError::FIELDS_ERROR);
            error->set_message(message);
          }
        }
        lock.unlock();
        call->Write(response);
        continue;
      }
      int64_t end = static_cast<int64_t>(stream->rows.size());
      const auto& rows = request.proto_rows().rows().serialized_rows();
      if (request.has_offset() && request.offset().value() < end) {
        response.mutable_error()->set_code(grpc::StatusCode::ALREADY_EXISTS);
        response.mutable_error()->set_message(
            fmt::format("The offset is within stream, expected offset {}, received {}", end,
                        request.offset().value()));
      } else if (request.has_offset() && request.offset().value() > end) {
        response.mutable_error()->set_code(grpc::StatusCode::OUT_OF_RANGE);
        response.mutable_error()->set_message(
            fmt::format("The offset is beyond stream, expected offset {}, received {}", end,
                        request.offset().value()));
      } else if (stream->finalized) {
        response.mutable_error()->set_code(grpc::StatusCode::INVALID_ARGUMENT);
        response.mutable_error()->set_message("Stream is finalized");
      } else if (row_type.cdc) {
        if (auto refused = ApplyChanges(request.write_stream(), row_type, request)) {
          return *refused;
        }
        response.mutable_append_result();
      } else {
        stream->rows.insert(stream->rows.end(), rows.begin(), rows.end());
        response.mutable_append_result()->mutable_offset()->set_value(end);
      }
      response.set_write_stream(request.write_stream());
      lock.unlock();
      call->Write(response);
    }
    return grpc::Status::OK;
  }
};

std::unique_ptr<FakeBigQueryWrite> FakeBigQueryWrite::Start(
    std::vector<std::vector<std::string>> table_schema) {
  auto fake = std::unique_ptr<FakeBigQueryWrite>(new FakeBigQueryWrite());
  fake->impl_ = std::make_unique<Impl>();
  fake->impl_->table_schema = std::move(table_schema);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &fake->impl_->port);
  builder.RegisterService(fake->impl_.get());
  fake->impl_->server = builder.BuildAndStart();
  if (!fake->impl_->server || fake->impl_->port == 0) return nullptr;
  return fake;
}

FakeBigQueryWrite::~FakeBigQueryWrite() {
  if (impl_ && impl_->server) {
    impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }
}

std::string FakeBigQueryWrite::endpoint() const { return fmt::format("127.0.0.1:{}", impl_->port); }

void FakeBigQueryWrite::Script(std::vector<Fault> faults) {
  std::lock_guard lock(impl_->mutex);
  impl_->faults.assign(faults.begin(), faults.end());
}

std::vector<std::string> FakeBigQueryWrite::Rows(const std::string& stream) const {
  std::lock_guard lock(impl_->mutex);
  auto found = impl_->streams.find(stream);
  return found == impl_->streams.end() ? std::vector<std::string>() : found->second.rows;
}

std::vector<std::string> FakeBigQueryWrite::VisibleRows(const std::string& table) const {
  std::lock_guard lock(impl_->mutex);
  std::string prefix = table + "/streams/";
  std::vector<std::string> out;
  for (const std::string& name : impl_->commit_order) {
    if (!name.starts_with(prefix)) continue;
    const std::vector<std::string>& rows = impl_->streams.at(name).rows;
    out.insert(out.end(), rows.begin(), rows.end());
  }
  for (const auto& [name, stream] : impl_->streams) {
    if (!name.starts_with(prefix) || stream.type == storage::WriteStream::PENDING) continue;
    out.insert(out.end(), stream.rows.begin(), stream.rows.end());
  }
  return out;
}

std::vector<std::string> FakeBigQueryWrite::violations() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->violations;
}

int FakeBigQueryWrite::append_calls() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->append_calls;
}

int FakeBigQueryWrite::append_requests() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->append_requests;
}

std::vector<bool> FakeBigQueryWrite::schema_flags() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->schema_flags;
}

std::vector<std::string> FakeBigQueryWrite::authorizations() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->authorizations;
}

}  // namespace bizon::testing_support

namespace bizon::testing_support {

void FakeBigQueryWrite::DeclarePrimaryKey(const std::string& table,
                                          std::vector<std::string> columns) {
  std::lock_guard lock(impl_->mutex);
  impl_->cdc_tables[table].key = std::move(columns);
}

std::vector<std::string> FakeBigQueryWrite::CdcRows(const std::string& table) const {
  std::lock_guard lock(impl_->mutex);
  std::vector<std::string> out;
  auto found = impl_->cdc_tables.find(table);
  if (found == impl_->cdc_tables.end()) return out;
  for (const auto& [key, change] : found->second.rows) {
    if (!change.deleted) out.push_back(change.json);
  }
  return out;
}

int FakeBigQueryWrite::cdc_changes() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->cdc_changes;
}

}  // namespace bizon::testing_support
