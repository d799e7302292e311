#include "common/destination_fields.h"

#include "common/write_disposition.h"

namespace bizon {

FieldSpec RecordSchemasField() {
  FieldSpec column =
      Option::Object("", {Option::String("name").Required(), Option::String("type").Required(),
                          Option::String("description", "")});
  std::vector<FieldSpec> entry_fields = {
      Option::String("destination_id").Required(),
      Option::List("record_schema", std::move(column)).Required()};
  // A table's own write disposition and schema contract, over the destination-wide ones.
  for (FieldSpec& policy : TablePolicyFields()) entry_fields.push_back(std::move(policy));
  FieldSpec entry = Option::Object("", std::move(entry_fields));
  return Option::List("record_schemas", std::move(entry),
                      "Columns per destination id, used when unnest is true.");
}

std::vector<FieldSpec> CommonDestinationFields() {
  return {
      Option::Number("buffer_size", "Buffer size in MB; 0 writes every iteration at once.")
          .Default(50)
          .Minimum(0),
      Option::Number("buffer_flush_timeout",
                     "Seconds after which a buffer is written even if not full; 0 disables.")
          .Default(600)
          .Minimum(0),
      Option::Integer("max_concurrent_threads",
                      "Parallel writes, for destinations that support them.")
          .Default(10)
          .Minimum(1),
      RecordSchemasField(),
      Option::Boolean("unnest", "Write the record_schemas columns instead of the raw payload.")
          .Default(false),
      Option::Map("authentication", "Destination credentials.").Secret(),
      Option::String("destination_id", "Where to write (file stem, table name)."),
  };
}

}  // namespace bizon
