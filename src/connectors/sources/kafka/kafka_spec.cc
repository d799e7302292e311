// The declared options of the kafka source: validation, defaults, help and the reference docs
// all come from this list; and what it takes from a `streams:` block before validation.
#include <vector>

#include "bizon/config_spec.h"
#include "bizon/value.h"
#include "connectors/sources/kafka/kafka_options.h"

namespace bizon::kafka {
namespace {

/// SASL PLAIN credentials, plus the schema registry settings, which sit beside `params` rather
/// than inside it.
FieldSpec KafkaAuthenticationField() {
  FieldSpec authentication = AuthenticationField({"basic"}, /*required=*/false);
  authentication.description =
      "SASL PLAIN credentials of the brokers (params) and access to the schema registry.";
  // `type` may be left out: basic is the only kind.
  authentication.default_variant = "basic";
  const std::vector<FieldSpec> schema_registry = {
      {.name = "schema_registry_type",
       .type = FieldType::kEnum,
       .description = "Kind of schema registry serving the Avro writer schemas: apicurio "
                      "(GET <url>/apis/registry/v2/ids/globalIds/<id>) or confluent (GET "
                      "<url>/schemas/ids/<id>; an extension over the original).",
       .nullable = false,
       .default_value = "apicurio",
       .enum_values = {"apicurio", "confluent"}},
      {.name = "schema_registry_url",
       .type = FieldType::kString,
       .description = "Base URL of the schema registry.",
       .nullable = false,
       .default_value = "",
       .example = "https://registry.example.com"},
      {.name = "schema_registry_username",
       .type = FieldType::kString,
       .description = "User name for HTTP basic authentication to the registry.",
       .nullable = false,
       .default_value = ""},
      {.name = "schema_registry_password",
       .type = FieldType::kString,
       .description = "Password for HTTP basic authentication to the registry.",
       .nullable = false,
       .default_value = "",
       .secret = true},
  };
  std::vector<FieldSpec>* target = &authentication.fields;
  for (VariantSpec& variant : authentication.variants) {
    if (variant.tag != "basic") continue;
    target = &variant.fields;
    for (FieldSpec& field : variant.fields) {
      if (field.name != authentication.discriminator) continue;
      field.required = false;
      field.default_value = "basic";
    }
  }
  target->insert(target->end(), schema_registry.begin(), schema_registry.end());
  return authentication;
}

Value DefaultConsumerConfig() {
  return Value(Value::Map{
      {"auto.offset.reset", "earliest"},
      {"enable.auto.commit", false},
      {"session.timeout.ms", 45000},
      {"max.poll.interval.ms", 600000},
      {"security.protocol", "SASL_SSL"},
  });
}

/// The topics to read, each with the destination id its records are routed to.
FieldSpec TopicsField() {
  return FieldSpec{
      .name = "topics",
      .type = FieldType::kList,
      .description =
          "Topics to read and the destination id of each; may be "
          "left out when a streams block names the topics.",
      .default_value = Value::EmptyList(),
      .items = {FieldSpec{.name = "topic",
                          .type = FieldType::kObject,
                          .description = "One topic and where its records go.",
                          .fields =
                              {
                                  {.name = "name",
                                   .type = FieldType::kString,
                                   .description = "Topic name.",
                                   .required = true,
                                   .nullable = false},
                                  {.name = "destination_id",
                                   .type = FieldType::kString,
                                   .description = "Destination table or file the topic's "
                                                  "records are routed to.",
                                   .required = true,
                                   .nullable = false},
                              },
                          .unknown_keys = UnknownKeys::kWarn}}};
}

}  // namespace

std::vector<FieldSpec> KafkaSourceFields() {
  return {
      TopicsField(),
      {.name = "bootstrap_servers",
       .type = FieldType::kString,
       .description = "Comma-separated host:port list of the brokers.",
       .required = true,
       .nullable = false,
       .example = "broker-1:9092,broker-2:9092"},
      {.name = "group_id",
       .type = FieldType::kString,
       .description = "Consumer group the offsets belong to.",
       .nullable = false,
       .default_value = "bizon"},
      {.name = "member",
       .type = FieldType::kString,
       .description = "Tells apart several processes of one stream pipeline on one host: "
                      "appended to the static member id (group.instance.id), which is "
                      "otherwise the pipeline name and the host name joined by a dot. Give "
                      "each such process its own, e.g. env://BIZON_MEMBER.",
       .nullable = false,
       .default_value = ""},
      {.name = "skip_message_empty_value",
       .type = FieldType::kBoolean,
       .description = "Drop messages without a value (tombstones).",
       .nullable = false,
       .default_value = true},
      {.name = "skip_message_invalid_keys",
       .type = FieldType::kBoolean,
       .description = "Drop messages whose key is not JSON, instead of failing.",
       .nullable = false,
       .default_value = false},
      {.name = "skip_message_on_decode_error",
       .type = FieldType::kBoolean,
       .description = "Drop messages whose value cannot be decoded, instead of failing.",
       .nullable = false,
       .default_value = false},
      {.name = "batch_size",
       .type = FieldType::kInteger,
       .description = "Most messages taken by one consume call (one iteration).",
       .nullable = false,
       .default_value = 100,
       .minimum = 1},
      {.name = "consumer_timeout",
       .type = FieldType::kInteger,
       .description = "Seconds one consume call, or a metadata request, may wait.",
       .nullable = false,
       .default_value = 10,
       .minimum = 0},
      {.name = "consumer_config",
       .type = FieldType::kMap,
       .description = "librdkafka consumer settings; a map given here replaces "
                      "the defaults as a whole.",
       .nullable = false,
       .default_value = DefaultConsumerConfig()},
      {.name = "message_encoding",
       .type = FieldType::kEnum,
       .description = "How message values are encoded: Avro with a registry header, or UTF-8 JSON.",
       .nullable = false,
       .default_value = "avro",
       .enum_values = {"avro", "utf-8"}},
      {.name = "commit_offsets",
       .type = FieldType::kEnum,
       .description = "always: the consumer group's offsets follow what the destination wrote; "
                      "production: only when the environment variable ENVIRONMENT is "
                      "'production', as the original did (the backend's cursor records progress "
                      "either way, so a resume is the same).",
       .nullable = false,
       .default_value = "always",
       .enum_values = {"always", "production"}},
      KafkaAuthenticationField(),
  };
}

void TopicsFromStreams(Value& config) {
  Value* source = config.Find("source");
  const Value* streams = config.Find("streams");
  if (source == nullptr || !source->is_map() || streams == nullptr || !streams->is_list()) return;
  Value::List routes;
  for (const Value& stream : streams->AsList()) {
    const Value* topic = stream.FindPath("source.topic");
    const Value* table = stream.FindPath("destination.table_id");
    if (topic == nullptr || !topic->is_string() || topic->AsString().empty() || table == nullptr ||
        !table->is_string()) {
      continue;
    }
    Value route(Value::Map{{"name", *topic}, {"destination_id", *table}});
    route.set_mark(stream.mark());
    routes.push_back(std::move(route));
  }
  if (routes.empty()) return;
  Value* topics = source->Find("topics");
  if (topics == nullptr || topics->is_null() || (topics->is_list() && topics->AsList().empty())) {
    source->Set("topics", Value(std::move(routes)));
    return;
  }
  if (!topics->is_list()) return;  // Validation reports the wrong type.
  for (Value& topic : topics->AsList()) {
    for (const Value& route : routes) {
      if (topic.is_map() && topic.GetString("name") == route.GetString("name")) {
        topic.Set("destination_id", *route.Find("destination_id"));
      }
    }
  }
}

}  // namespace bizon::kafka
