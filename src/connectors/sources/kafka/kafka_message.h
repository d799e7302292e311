// Pure functions that turn the bytes of one Kafka message into the parts of a bizon record: the
// schema registry header of an Avro value, UTF-8 JSON with the original's repairs, and the record
// JSON itself. Nothing here talks to a broker, so every rule is unit-tested on byte strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bizon/status.h"
#include "common/utf8.h"

namespace bizon::kafka {

/// The serializer header before an Avro body: magic byte 0, then the writer schema's id.
struct SchemaHeader {
  /// Confluent: a 4-byte big-endian id. Apicurio: an 8-byte big-endian global id, recognised
  /// (as the original does) by the first four bytes being zero.
  int64_t schema_id = 0;
  /// Bytes before the Avro body: 5 or 9.
  size_t length = 0;
};

/// Reads the header of an Avro message value. Fails when the value is shorter than 5 bytes, does
/// not start with the magic byte, or announces an 8-byte id without holding it.
Result<SchemaHeader> ParseSchemaHeader(std::string_view value);

/// What is wrong with a JSON text, for the repair rules.
enum class JsonProblem {
  kNone,
  kSyntax,
  /// A \uD800-\uDFFF escape that is not part of a high+low pair.
  kLoneSurrogate,
  /// A raw character below U+0020 inside a string.
  kControlCharacter,
};

struct JsonCheck {
  JsonProblem problem = JsonProblem::kNone;
  /// Byte offset of the problem.
  size_t offset = 0;
  bool ok() const { return problem == JsonProblem::kNone; }
};

/// Checks that `text` is exactly one JSON value (surrounding whitespace allowed), without
/// building it. Assumes valid UTF-8 (see RepairUtf8).
JsonCheck CheckJson(std::string_view text);

// Kafka's decoding checks and repairs UTF-8 with common/utf8.h.
using ::bizon::IsValidUtf8;
using ::bizon::RepairUtf8;

/// Replaces each \uXXXX escape of a lone surrogate by \ufffd; valid pairs are kept.
std::string ReplaceLoneSurrogates(std::string_view text);
/// Removes raw U+0000-U+001F except tab, line feed and carriage return.
std::string StripControlCharacters(std::string_view text);

/// A message value decoded as UTF-8 JSON. `repaired` holds the text when it had to be changed
/// (invalid UTF-8, lone surrogates, control characters); `json()` is what goes into the record.
struct DecodedJson {
  std::string_view original;
  std::optional<std::string> repaired;
  bool replaced_invalid_utf8 = false;
  std::string_view json() const { return repaired ? std::string_view(*repaired) : original; }
};

/// The original's utf-8 decoding: invalid bytes become U+FFFD, then the text must be JSON; on a
/// lone surrogate or a control character the text is repaired and checked once more (each repair
/// at most once). Errors name the problem and its byte offset, never the content.
Result<DecodedJson> DecodeJsonValue(std::string_view bytes);

/// Parses a message key: it must be UTF-8 JSON (no repairs, as the original). Returns the text.
Result<std::string_view> DecodeJsonKey(std::string_view bytes);

/// Appends the decimal digits of `value`.
void AppendInteger(std::string& out, int64_t value);

/// The record id: "partition_<p>_offset_<o>".
std::string RecordId(int32_t partition, int64_t offset);

/// One header, name and raw value (absent values are nullopt).
using MessageHeader = std::pair<std::string_view, std::optional<std::string_view>>;

/// The fields of a record's data, already encoded as JSON where noted.
struct RecordParts {
  std::string_view topic;
  int64_t offset = 0;
  int32_t partition = 0;
  int64_t timestamp_ms = 0;
  /// JSON text; "{}" when the message has no key.
  std::string_view keys_json = "{}";
  std::vector<MessageHeader> headers;
  /// JSON text of the decoded value.
  std::string_view value_json;
  /// JSON text of the writer schema, "{}" for utf-8 values.
  std::string_view schema_json = "{}";
};

/// Appends {topic, offset, partition, timestamp, keys, headers, value, schema}, in that order.
/// Header values are decoded as UTF-8 (invalid bytes replaced), absent ones are null.
void AppendRecordJson(std::string& out, const RecordParts& parts);

}  // namespace bizon::kafka
