#include "engine/queue/queue_message.h"

#include <cstring>

namespace bizon {
namespace {

// Layout: a sequence of fields, each an 8-byte little-endian integer or a length-prefixed byte
// string. Both ends are the same binary, so no versioning is needed beyond a magic number.
constexpr int64_t kMagic = 0x6e6f7a6962'01;

void PutInt(std::string& out, int64_t value) {
  char bytes[8];
  std::memcpy(bytes, &value, 8);
  out.append(bytes, 8);
}

void PutBytes(std::string& out, std::string_view bytes) {
  PutInt(out, static_cast<int64_t>(bytes.size()));
  out.append(bytes);
}

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  bool Int(int64_t& value) {
    if (bytes_.size() < 8) return false;
    std::memcpy(&value, bytes_.data(), 8);
    bytes_.remove_prefix(8);
    return true;
  }
  bool Bytes(std::string_view& value) {
    int64_t size = 0;
    if (!Int(size) || size < 0 || static_cast<size_t>(size) > bytes_.size()) return false;
    value = bytes_.substr(0, static_cast<size_t>(size));
    bytes_.remove_prefix(static_cast<size_t>(size));
    return true;
  }

 private:
  std::string_view bytes_;
};

}  // namespace

std::string EncodeMessage(const QueueMessage& message) {
  std::string out;
  out.reserve(message.records.ByteSize() + 256);
  PutInt(out, kMagic);
  PutInt(out, static_cast<int64_t>(message.kind));
  PutInt(out, message.iteration);
  PutInt(out, message.extracted_at_us);
  PutInt(out, message.source_exhausted ? 1 : 0);
  PutBytes(out, message.next_pagination.ToJson());
  PutBytes(out, message.next_state ? message.next_state->ToJson() : "");
  PutInt(out, static_cast<int64_t>(message.error.code()));
  PutInt(out, static_cast<int64_t>(message.error.failure_class()));
  PutBytes(out, message.error.message());
  // Once the producer's return status; its failure class above says the same. The slot stays so
  // that frames already in a broker still decode.
  PutBytes(out, "");
  const RecordBatch& records = message.records;
  PutInt(out, static_cast<int64_t>(records.size()));
  for (size_t i = 0; i < records.size(); ++i) {
    PutBytes(out, records.id(i));
    PutBytes(out, records.payload(i));
    PutInt(out, records.timestamp_us(i));
    PutBytes(out, records.destination_id(i));
  }
  return out;
}

Result<QueueMessage> DecodeMessage(std::string_view bytes) {
  Reader reader(bytes);
  auto corrupt = [] {
    return Fail(Status(StatusCode::kDataLoss, "a queue message is truncated or corrupt",
                       FailureClass::kQueue));
  };
  int64_t magic = 0, kind = 0, exhausted = 0, code = 0, failure_class = 0, count = 0;
  QueueMessage message;
  std::string_view pagination, state, error_message, unused_status;
  if (!reader.Int(magic) || magic != kMagic || !reader.Int(kind) ||
      !reader.Int(message.iteration) || !reader.Int(message.extracted_at_us) ||
      !reader.Int(exhausted) || !reader.Bytes(pagination) || !reader.Bytes(state) ||
      !reader.Int(code) || !reader.Int(failure_class) || !reader.Bytes(error_message) ||
      !reader.Bytes(unused_status) || !reader.Int(count) || kind < 0 || kind > 2) {
    return corrupt();
  }
  message.kind = static_cast<QueueMessage::Kind>(kind);
  message.source_exhausted = exhausted != 0;
  BIZON_ASSIGN_OR_RETURN(message.next_pagination, Value::FromJson(pagination));
  if (!state.empty()) {
    BIZON_ASSIGN_OR_RETURN(Value parsed, Value::FromJson(state));
    message.next_state = std::move(parsed);
  }
  message.error = Status(static_cast<StatusCode>(code), std::string(error_message),
                         static_cast<FailureClass>(failure_class));
  for (int64_t i = 0; i < count; ++i) {
    std::string_view id, payload, destination;
    int64_t timestamp = 0;
    if (!reader.Bytes(id) || !reader.Bytes(payload) || !reader.Int(timestamp) ||
        !reader.Bytes(destination)) {
      return corrupt();
    }
    message.records.Add(id, payload, timestamp, destination);
  }
  message.records.SetExtractedAt(message.extracted_at_us);
  return message;
}

}  // namespace bizon
