// SchemaRegistry: fetches Avro writer schemas by id and keeps them, compiled, for the process.
//
// | type        | request                                        | response                 |
// |-------------|------------------------------------------------|--------------------------|
// | `apicurio`  | GET <url>/apis/registry/v2/ids/globalIds/<id>  | the schema itself        |
// | `confluent` | GET <url>/schemas/ids/<id>                     | {"schema": "<json text>"}|
//
// Both with HTTP basic auth when a user name is configured. A schema is fetched once per id: the
// cache is never evicted (a topic has a handful of schema versions). The record's `schema` is the
// registry's schema with `"name": "Envelope"` forced at its top level, as the original does;
// decoding uses the schema as registered, so references to the record's own name still resolve.
//
// Thread-safety: not thread-safe; the kafka source calls it from its fetching thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "bizon/status.h"
#include "connectors/sources/kafka/avro_decoder.h"
#include "http/http_session.h"

namespace bizon::kafka {

enum class RegistryType { kApicurio, kConfluent };

struct SchemaRegistryOptions {
  RegistryType type = RegistryType::kApicurio;
  std::string url;
  std::string username;
  std::string password;
  /// Seconds for connecting and for each read.
  double timeout_s = 30;
};

struct RegisteredSchema {
  AvroDecoder decoder;
  /// JSON text of the schema as records carry it (with the Envelope name).
  std::string record_json;
};

class SchemaRegistry {
 public:
  explicit SchemaRegistry(SchemaRegistryOptions options);

  /// The schema with `id`, fetched on first use. A 404 is "schema <id> not found in registry
  /// <url>"; other failures name the request and status.
  Result<const RegisteredSchema*> Get(int64_t id);

  /// How many schemas were fetched from the registry (not from the cache).
  int64_t fetches() const { return fetches_; }

 private:
  SchemaRegistryOptions options_;
  std::unique_ptr<HttpSession> session_;
  std::map<int64_t, std::unique_ptr<RegisteredSchema>> cache_;
  int64_t fetches_ = 0;
};

/// Parses `apicurio` / `confluent`.
Result<RegistryType> ParseRegistryType(std::string_view text);

}  // namespace bizon::kafka
