#include "connectors/destinations/bigquery/avro_ocf_writer.h"

#include <fmt/format.h>
#include <zlib.h>

#include <random>

namespace bizon {
namespace {

Status AvroError(std::string_view what) {
  return Status(StatusCode::kInternal, fmt::format("{}: {}", what, avro_strerror()));
}

void AppendAvroBytes(std::string& out, std::string_view bytes) {
  AppendAvroLong(out, static_cast<int64_t>(bytes.size()));
  out.append(bytes);
}

/// Raw deflate (RFC 1951, no zlib header), as the Avro deflate codec specifies.
Result<std::string> Deflate(std::string_view input) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return Fail(Status(StatusCode::kInternal, "zlib deflateInit2 failed"));
  }
  std::string output(deflateBound(&stream, static_cast<uLong>(input.size())), '\0');
  // zlib's interface is not const-correct; it does not write through next_in.
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  stream.avail_in = static_cast<uInt>(input.size());
  stream.next_out = reinterpret_cast<Bytef*>(output.data());
  stream.avail_out = static_cast<uInt>(output.size());
  int result = deflate(&stream, Z_FINISH);
  output.resize(stream.total_out);
  deflateEnd(&stream);
  if (result != Z_STREAM_END) return Fail(Status(StatusCode::kInternal, "zlib deflate failed"));
  return output;
}

}  // namespace

void AppendAvroLong(std::string& out, int64_t value) {
  uint64_t zigzag = (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
  do {
    auto byte = static_cast<unsigned char>(zigzag & 0x7f);
    zigzag >>= 7;
    if (zigzag != 0) byte |= 0x80;
    out.push_back(static_cast<char>(byte));
  } while (zigzag != 0);
}

Result<std::unique_ptr<AvroOcfWriter>> AvroOcfWriter::Make(std::string schema_json,
                                                           int64_t block_bytes) {
  std::unique_ptr<AvroOcfWriter> writer(new AvroOcfWriter());
  writer->schema_json_ = std::move(schema_json);
  writer->block_bytes_ = block_bytes > 0 ? block_bytes : 1;
  avro_schema_error_t error = nullptr;
  if (avro_schema_from_json(writer->schema_json_.data(),
                            static_cast<int32_t>(writer->schema_json_.size()), &writer->schema_,
                            &error) != 0) {
    return Fail(Status(StatusCode::kInvalidArgument,
                       fmt::format("invalid Avro schema: {}", avro_strerror())));
  }
  if (!is_avro_record(writer->schema_)) {
    return Fail(Status(StatusCode::kInvalidArgument, "invalid Avro schema: not a record"));
  }
  writer->iface_ = avro_generic_class_from_schema(writer->schema_);
  if (writer->iface_ == nullptr) return Fail(AvroError("avro_generic_class_from_schema"));
  if (avro_generic_value_new(writer->iface_, &writer->row_) != 0) {
    return Fail(AvroError("avro_generic_value_new"));
  }
  writer->row_made_ = true;
  writer->scratch_.resize(4096);
  writer->encoder_ =
      avro_writer_memory(writer->scratch_.data(), static_cast<int64_t>(writer->scratch_.size()));
  std::random_device random;
  for (char& byte : writer->sync_) byte = static_cast<char>(random() & 0xff);
  return writer;
}

AvroOcfWriter::~AvroOcfWriter() {
  if (encoder_ != nullptr) avro_writer_free(encoder_);
  if (row_made_) avro_value_decref(&row_);
  if (iface_ != nullptr) avro_value_iface_decref(iface_);
  if (schema_ != nullptr) avro_schema_decref(schema_);
}

Result<avro_value_t> AvroOcfWriter::Field(size_t index) {
  avro_value_t field;
  if (avro_value_get_by_index(&row_, index, &field, nullptr) != 0) {
    return Fail(AvroError(fmt::format("Avro field {}", index)));
  }
  return field;
}

Status AvroOcfWriter::AppendRow() {
  size_t size = 0;
  if (avro_value_sizeof(&row_, &size) != 0) return AvroError("Avro row size");
  if (size > scratch_.size()) {
    scratch_.resize(std::max(size, scratch_.size() * 2));
  }
  avro_writer_memory_set_dest(encoder_, scratch_.data(), static_cast<int64_t>(scratch_.size()));
  if (avro_value_write(encoder_, &row_) != 0) return AvroError("Avro row encoding");
  block_.append(scratch_.data(), static_cast<size_t>(avro_writer_tell(encoder_)));
  ++block_rows_;
  ++total_rows_;
  avro_value_reset(&row_);
  if (static_cast<int64_t>(block_.size()) >= block_bytes_) return CloseBlock();
  return Status::Ok();
}

Status AvroOcfWriter::CloseBlock() {
  if (file_.empty()) {
    file_.append("Obj\x01", 4);
    AppendAvroLong(file_, 2);
    AppendAvroBytes(file_, "avro.schema");
    AppendAvroBytes(file_, schema_json_);
    AppendAvroBytes(file_, "avro.codec");
    AppendAvroBytes(file_, "deflate");
    AppendAvroLong(file_, 0);
    file_.append(sync_.data(), sync_.size());
  }
  if (block_rows_ == 0) return Status::Ok();
  BIZON_ASSIGN_OR_RETURN(std::string compressed, Deflate(block_));
  AppendAvroLong(file_, block_rows_);
  AppendAvroLong(file_, static_cast<int64_t>(compressed.size()));
  file_.append(compressed);
  file_.append(sync_.data(), sync_.size());
  block_.clear();
  block_rows_ = 0;
  return Status::Ok();
}

Result<std::string> AvroOcfWriter::Finish() {
  BIZON_RETURN_IF_ERROR(CloseBlock());
  std::string file = std::move(file_);
  file_.clear();
  total_rows_ = 0;
  return file;
}

}  // namespace bizon
