// Fuzz target: a Kafka message value as the kafka source decodes it
// (connectors/sources/kafka/avro_decoder.h). Input: a writer schema's JSON, a NUL byte, then the
// Avro binary body; without a NUL the whole input is a body for a fixed schema that uses every
// type and logical type. The schema comes from a registry and the body from a topic, so both
// are untrusted.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "bizon/value.h"
#include "connectors/sources/kafka/avro_decoder.h"

namespace {

constexpr std::string_view kFixedSchema = R"({
  "type": "record", "name": "Event", "namespace": "fuzz",
  "fields": [
    {"name": "flag", "type": "boolean"},
    {"name": "count", "type": "int"},
    {"name": "total", "type": "long"},
    {"name": "ratio", "type": "float"},
    {"name": "score", "type": "double"},
    {"name": "blob", "type": "bytes"},
    {"name": "label", "type": "string"},
    {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
    {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 4}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attributes", "type": {"type": "map", "values": ["null", "long"]}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "time", "type": {"type": "int", "logicalType": "time-millis"}},
    {"name": "time_us", "type": {"type": "long", "logicalType": "time-micros"}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                               "scale": 2}},
    {"name": "amount", "type": {"type": "fixed", "name": "Amount", "size": 3,
                                "logicalType": "decimal", "precision": 6, "scale": 1}},
    {"name": "nothing", "type": {"type": "array", "items": "null"}},
    {"name": "next", "type": ["null", "Event"]}
  ]
})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  static const bizon::kafka::AvroDecoder kFixed =
      bizon::kafka::AvroDecoder::Compile(kFixedSchema).value();
  bizon::Result<bizon::kafka::AvroDecoder> compiled = kFixed;
  if (size_t nul = input.find('\0'); nul != std::string_view::npos) {
    compiled = bizon::kafka::AvroDecoder::Compile(input.substr(0, nul));
    input.remove_prefix(nul + 1);
  }
  if (!compiled) return 0;
  std::string out;
  if (!compiled->Decode(input, out).ok()) return 0;
  // A decoded value is handed on as JSON text: it must parse.
  if (!bizon::Value::FromJson(out)) __builtin_trap();
  return 0;
}
