#include "connectors/sources/sana_ai/sana_ai_export.h"

#include <fmt/format.h>

#include <optional>

#include "bizon/value.h"
#include "common/utf8.h"
#include "http/http_session.h"

namespace bizon {
namespace {

Status SourceError(std::string message) {
  return Status(StatusCode::kFailedPrecondition, std::move(message), FailureClass::kSource);
}

std::string StringAt(const std::optional<Value>& value) {
  return value && value->is_string() ? value->AsString() : std::string();
}

// A job's error, in the shapes an API envelope uses: a string, or an object with a message.
std::string ErrorText(const std::optional<Value>& error) {
  if (!error || error->is_null()) return "";
  if (error->is_string()) return error->AsString();
  if (error->is_map()) {
    std::string message = error->GetString("message");
    if (!message.empty()) return message;
  }
  return error->ToJson();
}

// ForEachCsvRecord's reader, a character at a time: the fields of the record being read, and
// where it stands in them, as Python's csv module reads its default dialect.
class CsvReader {
 public:
  explicit CsvReader(const std::function<Status(std::vector<std::string>&, size_t)>& visit)
      : visit_(visit) {}

  bool in_quoted_field() const { return state_ == State::kInQuoted; }

  // A line break inside a quoted field: the lines of the error messages count it.
  void CountLine() { ++line_; }

  // Any character but a line break outside a quoted field.
  void Take(char c) {
    switch (state_) {
      case State::kStartRecord:
      case State::kStartField:
        if (c == '"') {
          state_ = State::kInQuoted;
          quote_line_ = line_;
        } else if (c == ',') {
          EndField();
          state_ = State::kStartField;
        } else {
          field_.push_back(c);
          state_ = State::kInField;
        }
        break;
      case State::kInField:
        if (c == ',') {
          EndField();
          state_ = State::kStartField;
        } else {
          field_.push_back(c);
        }
        break;
      case State::kInQuoted:
        if (c == '"') {
          state_ = State::kQuoteInQuoted;
        } else {
          field_.push_back(c);
        }
        break;
      case State::kQuoteInQuoted:
        if (c == '"') {
          field_.push_back('"');
          state_ = State::kInQuoted;
        } else if (c == ',') {
          EndField();
          state_ = State::kStartField;
        } else {
          field_.push_back(c);  // Python's csv keeps text after a closing quote.
          state_ = State::kInField;
        }
        break;
    }
  }

  // A line break outside a quoted field: hands the record to the visitor.
  Status EndRecord() {
    if (state_ != State::kStartRecord) EndField();  // Else a blank line: no fields.
    BIZON_RETURN_IF_ERROR(Visit());
    ++line_;
    record_line_ = line_;
    state_ = State::kStartRecord;
    return Status::Ok();
  }

  // The end of the text: its last record, unless a quoted field is left open.
  Status Finish() {
    if (state_ == State::kInQuoted) {
      return SourceError(
          fmt::format("the CSV ends inside a quoted field (a truncated download?): the field "
                      "opened on line {}",
                      quote_line_));
    }
    if (state_ == State::kStartRecord) return Status::Ok();
    EndField();
    return Visit();
  }

 private:
  enum class State { kStartRecord, kStartField, kInField, kInQuoted, kQuoteInQuoted };

  void EndField() {
    fields_.push_back(std::move(field_));
    field_.clear();
  }

  Status Visit() {
    Status status = visit_(fields_, record_line_);
    fields_.clear();
    return status;
  }

  const std::function<Status(std::vector<std::string>&, size_t)>& visit_;
  State state_ = State::kStartRecord;
  std::vector<std::string> fields_;
  std::string field_;
  size_t line_ = 1;
  size_t record_line_ = 1;
  size_t quote_line_ = 0;
};

}  // namespace

SanaJobPhase ClassifySanaJobStatus(std::string_view status) {
  if (status == "successful") return SanaJobPhase::kSucceeded;
  for (std::string_view failed : {"failed", "error", "cancelled", "canceled", "expired"}) {
    if (status == failed) return SanaJobPhase::kFailed;
  }
  return SanaJobPhase::kRunning;
}

Result<std::string> ReadSanaJobId(const JsonPage& page) {
  BIZON_ASSIGN_OR_RETURN(std::optional<Value> id, page.Find("data.jobId"));
  if (!id || !id->is_string() || id->AsString().empty()) {
    return Fail(
        SourceError(fmt::format("the Sana answer to the export request has no data.jobId: {}: {}",
                                page.origin(), BodyExcerpt(page.text()))));
  }
  return id->AsString();
}

Result<SanaJobState> ReadSanaJobState(const JsonPage& page) {
  BIZON_ASSIGN_OR_RETURN(std::optional<Value> status, page.Find("data.status"));
  if (!status || !status->is_string() || status->AsString().empty()) {
    return Fail(SourceError(fmt::format("the Sana job answer has no data.status: {}: {}",
                                        page.origin(), BodyExcerpt(page.text()))));
  }
  SanaJobState state{.status = status->AsString(),
                     .phase = ClassifySanaJobStatus(status->AsString())};
  if (state.phase == SanaJobPhase::kSucceeded) {
    BIZON_ASSIGN_OR_RETURN(std::optional<Value> url, page.Find("data.link.url"));
    state.link_url = StringAt(url);
    if (state.link_url.empty()) {
      return Fail(SourceError(fmt::format(
          "the Sana job is successful but its answer has no data.link.url: {}", page.origin())));
    }
  } else if (state.phase == SanaJobPhase::kFailed) {
    BIZON_ASSIGN_OR_RETURN(std::optional<Value> error, page.Find("data.error"));
    if (!error || error->is_null()) {
      BIZON_ASSIGN_OR_RETURN(error, page.Find("error"));
    }
    state.error = ErrorText(error);
  }
  return state;
}

Status ForEachCsvRecord(std::string_view csv,
                        const std::function<Status(std::vector<std::string>&, size_t)>& visit) {
  CsvReader reader(visit);
  for (size_t i = 0; i < csv.size(); ++i) {
    char c = csv[i];
    bool newline = c == '\n' || c == '\r';
    if (newline && !reader.in_quoted_field()) {
      // \r\n is one end of record.
      if (c == '\r' && i + 1 < csv.size() && csv[i + 1] == '\n') ++i;
      BIZON_RETURN_IF_ERROR(reader.EndRecord());
      continue;
    }
    if (c == '\n' || (c == '\r' && (i + 1 >= csv.size() || csv[i + 1] != '\n'))) {
      reader.CountLine();
    }
    reader.Take(c);
  }
  return reader.Finish();
}

Result<RecordBatch> SanaReportRecords(std::string_view csv, int64_t extracted_at_us) {
  if (csv.starts_with("\xEF\xBB\xBF")) csv.remove_prefix(3);
  if (!IsValidUtf8(csv)) {
    return Fail(SourceError("the report's CSV is not valid UTF-8"));
  }
  RecordBatch records;
  std::vector<std::string> header;
  bool have_header = false;
  // For each column, the position of its name's first occurrence among the unique names.
  std::vector<size_t> slot;
  std::vector<std::string> names;
  std::string json;
  BIZON_RETURN_IF_ERROR(
      ForEachCsvRecord(csv, [&](std::vector<std::string>& fields, size_t line) -> Status {
        if (!have_header) {
          if (fields.empty()) return Status::Ok();  // Blank lines before the header.
          header = std::move(fields);
          for (const std::string& name : header) {
            size_t at = 0;
            while (at < names.size() && names[at] != name) ++at;
            if (at == names.size()) names.push_back(name);
            slot.push_back(at);
          }
          have_header = true;
          return Status::Ok();
        }
        if (fields.empty()) return Status::Ok();
        if (fields.size() > header.size()) {
          return SourceError(fmt::format(
              "a row of the report's CSV has more fields than its header: line {}, {} fields "
              "for {} columns",
              line, fields.size(), header.size()));
        }
        std::vector<const std::string*> values(names.size(), nullptr);
        for (size_t i = 0; i < fields.size(); ++i) values[slot[i]] = &fields[i];
        json.clear();
        json.push_back('{');
        for (size_t i = 0; i < names.size(); ++i) {
          if (i > 0) json.push_back(',');
          AppendJsonString(json, names[i]);
          json.push_back(':');
          if (values[i] == nullptr) {
            json += "null";
          } else {
            AppendJsonString(json, *values[i]);
          }
        }
        json.push_back('}');
        records.Add(std::to_string(records.size()), json, extracted_at_us);
        return Status::Ok();
      }));
  return records;
}

}  // namespace bizon
