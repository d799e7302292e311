#include "connectors/destinations/parquet/ndjson_part_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace bizon {
namespace {

Status RecordError(std::string_view record_id, std::string message) {
  return Status(StatusCode::kInvalidArgument, fmt::format("record {}: {}", record_id, message),
                FailureClass::kDestination);
}

}  // namespace

Status AppendUnnestedJson(std::string& out, const std::vector<std::string>& columns,
                          std::string_view payload, std::string_view record_id) {
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(payload.data(), payload.size()).get(object)) {
    return RecordError(record_id, "unnest needs a JSON object");
  }
  if (object.size() != columns.size()) {
    return RecordError(record_id, fmt::format("{} keys, but its record_schema declares {}",
                                              object.size(), columns.size()));
  }
  out.push_back('{');
  for (size_t i = 0; i < columns.size(); ++i) {
    simdjson::dom::element element;
    if (object.at_key(columns[i]).get(element)) {
      return RecordError(record_id,
                         fmt::format("no key '{}' declared in its record_schema", columns[i]));
    }
    if (i > 0) out.push_back(',');
    AppendJsonStringFast(out, columns[i]);
    out.push_back(':');
    out.append(simdjson::minify(element));
  }
  out.push_back('}');
  return Status::Ok();
}

Status NdjsonPartWriter::AppendRecord(const RecordBatch& batch, size_t i, int64_t loaded_at_us) {
  if (rows_ == 0) writer_.StartBatch();  // A forked child reseeds its ids.
  writer_.Append(lines_, batch, i, loaded_at_us);
  lines_.push_back('\n');
  ++rows_;
  return Status::Ok();
}

Status NdjsonPartWriter::AppendUnnested(std::string_view payload, std::string_view record_id) {
  size_t start = lines_.size();
  if (Status appended = AppendUnnestedJson(lines_, *columns_, payload, record_id); !appended.ok()) {
    lines_.resize(start);
    return appended;
  }
  lines_.push_back('\n');
  ++rows_;
  return Status::Ok();
}

Status NdjsonPartWriter::WritePart(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  std::string_view data = lines_;
  while (fd >= 0 && !data.empty()) {
    ssize_t written = ::write(fd, data.data(), data.size());
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) break;
    data.remove_prefix(static_cast<size_t>(written));
  }
  int error = errno;
  if (fd >= 0) ::close(fd);
  if (fd < 0 || !data.empty()) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("cannot write {}: {}", path, std::strerror(error)),
                  FailureClass::kDestination);
  }
  return Discard();
}

Status NdjsonPartWriter::Discard() {
  lines_.clear();
  rows_ = 0;
  return Status::Ok();
}

}  // namespace bizon
