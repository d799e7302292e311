#include "config/pipeline_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "postgres/postgres_client.h"

namespace bizon {
namespace {

FieldSpec String(std::string name, std::string description) {
  return {
      .name = std::move(name), .type = FieldType::kString, .description = std::move(description)};
}

FieldSpec Secret(std::string name, std::string description, bool required) {
  return {.name = std::move(name),
          .type = FieldType::kString,
          .description = std::move(description),
          .required = required,
          .secret = true};
}

FieldSpec StringList(std::string name, std::string description) {
  return {.name = std::move(name),
          .type = FieldType::kList,
          .description = std::move(description),
          .items = {{.type = FieldType::kString}}};
}

std::vector<FieldSpec> TokenParams() {
  return {
      Secret("token", "API token sent on every request.", true),
      {.name = "auth_method",
       .type = FieldType::kString,
       .description = "Scheme placed before the token; empty sends the bare token.",
       .default_value = Value("Bearer")},
      {.name = "auth_header",
       .type = FieldType::kString,
       .description = "Header carrying the token.",
       .default_value = Value("Authorization")},
  };
}

std::vector<FieldSpec> BasicParams() {
  return {
      {.name = "username",
       .type = FieldType::kString,
       .description = "User name.",
       .required = true},
      {.name = "password",
       .type = FieldType::kString,
       .description = "Password.",
       .default_value = Value(""),
       .secret = true},
      {.name = "auth_method",
       .type = FieldType::kString,
       .description = "Scheme name.",
       .default_value = Value("Basic")},
      {.name = "auth_header",
       .type = FieldType::kString,
       .description = "Header carrying the credentials.",
       .default_value = Value("Authorization")},
  };
}

/// queue.authentication of the kafka queue: the kafka source's basic credentials (SASL, PLAIN
/// unless client_config names another mechanism).
FieldSpec KafkaQueueAuthentication() {
  return {.name = "authentication",
          .type = FieldType::kObject,
          .description =
              "SASL credentials of the brokers, as the kafka source's "
              "authentication: PLAIN unless client_config sets sasl.mechanisms.",
          .fields = {{.name = "type",
                      .type = FieldType::kEnum,
                      .description = "basic (the only kind).",
                      .default_value = Value("basic"),
                      .enum_values = {"basic"}},
                     {.name = "params",
                      .type = FieldType::kObject,
                      .required = true,
                      .fields = {{.name = "username",
                                  .type = FieldType::kString,
                                  .description = "SASL user name.",
                                  .required = true},
                                 {.name = "password",
                                  .type = FieldType::kString,
                                  .description = "SASL password.",
                                  .default_value = Value(""),
                                  .secret = true}}}}};
}

/// queue.tls of the rabbitmq queue (AMQPS; the broker's TLS port is usually 5671).
FieldSpec RabbitmqTls() {
  return {.name = "tls",
          .type = FieldType::kObject,
          .description =
              "Connect over TLS (AMQPS, usually port 5671) when given; {} trusts the "
              "system's CAs.",
          .fields = {String("ca_certificate",
                            "PEM file of the CA certificate(s) the broker's certificate must "
                            "chain to; unset: the system's."),
                     String("client_certificate",
                            "PEM file of the client certificate, for a broker that asks for one "
                            "(ssl_options.fail_if_no_peer_cert); needs client_key."),
                     String("client_key", "PEM file of the client certificate's private key."),
                     {.name = "verify_peer",
                      .type = FieldType::kBoolean,
                      .description = "Check the broker's certificate chain.",
                      .default_value = Value(true)},
                     {.name = "verify_hostname",
                      .type = FieldType::kBoolean,
                      .description = "Check that the broker's certificate names host.",
                      .default_value = Value(true)}}};
}

std::vector<FieldSpec> OauthParams() {
  return {
      {.name = "token_refresh_endpoint",
       .type = FieldType::kString,
       .description = "URL of the token endpoint.",
       .required = true},
      {.name = "client_id",
       .type = FieldType::kString,
       .description = "OAuth client id.",
       .required = true},
      Secret("client_secret", "OAuth client secret.", true),
      Secret("refresh_token", "Refresh token, for the refresh_token grant.", false),
      StringList("scopes", "Scopes requested, sent comma-separated."),
      String("token_expiry_date", "Expiry of an access token supplied up front."),
      String("token_expiry_date_format", "strftime format of expires_in when it is a date."),
      {.name = "access_token_name",
       .type = FieldType::kString,
       .description = "Response field holding the access token.",
       .default_value = Value("access_token")},
      {.name = "expires_in_name",
       .type = FieldType::kString,
       .description = "Response field holding the lifetime in seconds.",
       .default_value = Value("expires_in")},
      {.name = "refresh_request_body",
       .type = FieldType::kMap,
       .description = "Extra form fields sent with the refresh request."},
      {.name = "grant_type",
       .type = FieldType::kString,
       .description = "OAuth grant type.",
       .default_value = Value("refresh_token")},
      String("response_field_path", "Path of the object holding the token in the response."),
      {.name = "expiry_skew_seconds",
       .type = FieldType::kInteger,
       .description = "Refresh this many seconds before expiry (default: 10% of the lifetime, "
                      "at most 60).",
       .minimum = 0},
  };
}

std::vector<FieldSpec> CookieParams() {
  return {
      {.name = "cookies",
       .type = FieldType::kMap,
       .description = "Cookies sent on each request.",
       .required = true,
       .secret = true,
       .items = {{.type = FieldType::kString, .secret = true}}},
      {.name = "headers",
       .type = FieldType::kMap,
       .description = "Extra headers.",
       .default_value = Value::EmptyMap(),
       .items = {{.type = FieldType::kString}}},
  };
}

VariantSpec AuthVariant(const std::string& type) {
  std::vector<FieldSpec> params;
  std::string description;
  if (type == "api_key" || type == "bearer") {
    params = TokenParams();
    description = "A token in a header.";
  } else if (type == "basic") {
    params = BasicParams();
    description = "HTTP basic authentication.";
  } else if (type == "oauth") {
    params = OauthParams();
    description = "OAuth 2 with token refresh.";
  } else {
    params = CookieParams();
    description = "Session cookies.";
  }
  VariantSpec variant{
      .tag = type,
      .description = description,
      .fields = {{.name = "type", .type = FieldType::kString, .required = true},
                 {.name = "params",
                  .type = FieldType::kObject,
                  .description = "Credentials for this authentication type.",
                  .fields = std::move(params)}},
      // Connectors read extra keys beside params (kafka's schema registry settings).
      .unknown_keys = UnknownKeys::kWarn};
  if (type == "api_key" || type == "bearer") {
    // The seed README's shorthand: `api_key: ...` beside `type`, instead of params.token.
    variant.fields.push_back(Secret("api_key", "Shorthand for params.token.", false));
  }
  return variant;
}

void SourceVariantFields(const SourceDescriptor& descriptor, VariantSpec& variant) {
  std::vector<FieldSpec> fields = CommonSourceFields();
  std::vector<std::string> stream_names;
  for (const StreamSpec& stream : descriptor.streams) stream_names.push_back(stream.name);
  for (FieldSpec& field : fields) {
    if (field.name == "stream" && !descriptor.streams_from_config) {
      field.type = FieldType::kEnum;
      field.enum_values = stream_names;
    }
  }
  for (const FieldSpec& own : descriptor.config.fields) {
    auto existing = std::find_if(fields.begin(), fields.end(),
                                 [&](const FieldSpec& f) { return f.name == own.name; });
    if (existing != fields.end()) {
      *existing = own;
    } else {
      fields.push_back(own);
    }
  }
  variant.fields = std::move(fields);
}

FieldSpec BackendConfig(bool postgres) {
  std::vector<FieldSpec> fields = {
      {.name = "database",
       .type = FieldType::kString,
       .description = "Database name; for sqlite the file is <database>.sqlite3 in the working "
                      "directory; for bigquery the GCP project.",
       .required = true},
      {.name = "schema",
       .type = FieldType::kString,
       .description = "Schema (dataset for bigquery) holding the state tables.",
       .required = true},
      {.name = "syncCursorInDBEvery",
       .type = FieldType::kInteger,
       .description = "Write the source cursor to the backend every N iterations.",
       .default_value = Value(10),
       .minimum = 1},
      {.name = "echoEngine",
       .type = FieldType::kBoolean,
       .description = "Log every SQL statement.",
       .default_value = Value(false)},
  };
  if (postgres) {
    fields.push_back({.name = "host",
                      .type = FieldType::kString,
                      .description = "PostgreSQL host.",
                      .required = true});
    fields.push_back({.name = "port",
                      .type = FieldType::kInteger,
                      .description = "PostgreSQL port.",
                      .required = true,
                      .minimum = 1,
                      .maximum = 65535});
    fields.push_back({.name = "username",
                      .type = FieldType::kString,
                      .description = "PostgreSQL user.",
                      .required = true});
    fields.push_back(Secret("password", "PostgreSQL password.", true));
    for (FieldSpec& tls : PgTlsFields()) fields.push_back(std::move(tls));
  }
  return {.name = "config",
          .type = FieldType::kObject,
          .description = "Connection settings of the backend.",
          .required = true,
          .fields = std::move(fields),
          .unknown_keys = UnknownKeys::kIgnore};
}

FieldSpec BackendField() {
  auto variant = [](std::string tag, std::string description, FieldSpec config) {
    return VariantSpec{.tag = std::move(tag),
                       .description = std::move(description),
                       .fields = {{.name = "type", .type = FieldType::kString}, std::move(config)},
                       .unknown_keys = UnknownKeys::kIgnore};
  };
  FieldSpec bigquery_config = BackendConfig(false);
  bigquery_config.fields.push_back({.name = "create_schema",
                                    .type = FieldType::kBoolean,
                                    .description = "Create the dataset when it is missing.",
                                    .default_value = Value(false)});
  bigquery_config.fields.push_back(String("schema_location", "Location of a created dataset."));
  bigquery_config.fields.push_back(Secret("service_account_key", "Service account JSON.", false));
  Value default_backend = Value::EmptyMap();
  default_backend.Set("type", "sqlite");
  Value default_config = Value::EmptyMap();
  default_config.Set("database", "bizon");
  default_config.Set("schema", "public");
  default_config.Set("syncCursorInDBEvery", 10);
  default_backend.Set("config", default_config);
  return {.name = "backend",
          .type = FieldType::kObject,
          .description = "Where jobs and cursors are stored.",
          .default_value = default_backend,
          .discriminator = "type",
          .variants = {variant("sqlite", "A SQLite file (the default).", BackendConfig(false)),
                       variant("sqlite_in_memory", "A private in-memory SQLite database.",
                               BackendConfig(false)),
                       variant("postgres", "PostgreSQL.", BackendConfig(true)),
                       variant("bigquery", "BigQuery tables.", std::move(bigquery_config))},
          .default_variant = "sqlite"};
}

FieldSpec QueueField() {
  FieldSpec python_config = {
      .name = "config",
      .type = FieldType::kObject,
      .description = "In-process queue settings.",
      .default_value = Value::EmptyMap(),
      .fields = {
          {.name = "max_nb_messages",
           .type = FieldType::kInteger,
           .description = "The producer pauses once about this many records are queued.",
           .default_value = Value(1000000),
           .minimum = 1},
          {.name = "max_bytes",
           .type = FieldType::kInteger,
           .description = "The producer also pauses once queued records take this many bytes "
                          "(unset: 16 MiB).",
           .minimum = 1},
          {.name = "queue",
           .type = FieldType::kObject,
           .description = "Queue sizing.",
           .default_value = Value::EmptyMap(),
           .fields = {{.name = "max_size",
                       .type = FieldType::kInteger,
                       .description = "Maximum queued iterations; 0 means unbounded.",
                       .default_value = Value(0),
                       .minimum = 0}}},
          {.name = "consumer",
           .type = FieldType::kObject,
           .description = "Consumer settings.",
           .default_value = Value::EmptyMap(),
           .fields = {{.name = "poll_interval",
                       .type = FieldType::kNumber,
                       .description = "Seconds between polls (kept for compatibility).",
                       .default_value = Value(1)}}},
      }};
  // Shared by the network queues.
  FieldSpec unused_message_count = {
      .name = "max_nb_messages",
      .type = FieldType::kInteger,
      .description = "Kept for compatibility (unused: max_bytes bounds the queue).",
      .default_value = Value(1000000)};
  FieldSpec unconsumed_bytes = {
      .name = "max_bytes",
      .type = FieldType::kInteger,
      .description =
          "The producer pauses while this many bytes are published but not yet "
          "written by the consumer (at least twice the destination buffer).",
      .default_value = Value(268435456),
      .minimum = 1};
  auto byte_limit = [](std::string name, std::string description, int64_t default_value,
                       int64_t minimum) {
    return FieldSpec{.name = std::move(name),
                     .type = FieldType::kInteger,
                     .description = std::move(description),
                     .default_value = Value(default_value),
                     .minimum = static_cast<double>(minimum)};
  };
  FieldSpec kafka_config = {
      .name = "config",
      .type = FieldType::kObject,
      .description = "Kafka queue settings.",
      .required = true,
      .fields = {
          {.name = "queue",
           .type = FieldType::kObject,
           .required = true,
           .fields = {{.name = "bootstrap_server",
                       .type = FieldType::kString,
                       .description = "Broker address, host:port.",
                       .required = true},
                      {.name = "topic",
                       .type = FieldType::kString,
                       .description = "Topic carrying the batches; one topic per pipeline stream.",
                       .default_value = Value("bizon")},
                      byte_limit("max_message_bytes",
                                 "Largest Kafka message bizon sends; bigger iterations are cut "
                                 "into several. A topic bizon creates allows this size.",
                                 1000000, 1024),
                      {.name = "client_config",
                       .type = FieldType::kMap,
                       .description =
                           "librdkafka settings for the producer and the consumer, as the "
                           "kafka source's consumer_config: security.protocol (SSL, "
                           "SASL_SSL, SASL_PLAINTEXT), sasl.mechanisms (PLAIN, SCRAM-SHA-256, "
                           "SCRAM-SHA-512), ssl.ca.location, ssl.certificate.location, "
                           "ssl.key.location, ssl.key.password, "
                           "ssl.endpoint.identification.algorithm... Settings bizon makes for "
                           "its guarantees (acks, enable.idempotence, group.id, offsets) are "
                           "refused.",
                       .default_value = Value::EmptyMap()},
                      KafkaQueueAuthentication()}},
          {.name = "consumer",
           .type = FieldType::kObject,
           .default_value = Value::EmptyMap(),
           .fields = {{.name = "group_id",
                       .type = FieldType::kString,
                       .description = "Consumer group whose offsets record what was written.",
                       .default_value = Value("bizon")},
                      {.name = "auto_offset_reset",
                       .type = FieldType::kString,
                       .description = "Where a group without committed offsets starts.",
                       .default_value = Value("earliest")},
                      {.name = "enable_auto_commit",
                       .type = FieldType::kBoolean,
                       .description = "Kept for compatibility: offsets are always committed after "
                                      "the destination wrote the records.",
                       .default_value = Value(true)},
                      {.name = "consumer_timeout_ms",
                       .type = FieldType::kInteger,
                       .description = "Kept for compatibility (unused).",
                       .default_value = Value(1000)},
                      byte_limit("prefetch_bytes",
                                 "Bytes the consumer may fetch ahead of the destination.", 67108864,
                                 1048576)}},
          unused_message_count,
          unconsumed_bytes}};
  FieldSpec rabbitmq_config = {
      .name = "config",
      .type = FieldType::kObject,
      .description = "RabbitMQ queue settings.",
      .required = true,
      .fields = {
          {.name = "queue",
           .type = FieldType::kObject,
           .required = true,
           .fields =
               {{.name = "host",
                 .type = FieldType::kString,
                 .description = "Broker host.",
                 .required = true},
                {.name = "port", .type = FieldType::kInteger, .default_value = Value(5672)},
                {.name = "queue_name",
                 .type = FieldType::kString,
                 .description = "Durable queue carrying the batches; one per pipeline stream.",
                 .required = true},
                {.name = "exchange",
                 .type = FieldType::kString,
                 .description = "Exchange to publish to (bound to the queue by its name); empty: "
                                "the default exchange.",
                 .default_value = Value("")},
                {.name = "username", .type = FieldType::kString, .default_value = Value("guest")},
                {.name = "password",
                 .type = FieldType::kString,
                 .default_value = Value("guest"),
                 .secret = true},
                {.name = "vhost", .type = FieldType::kString, .default_value = Value("/")},
                byte_limit("max_message_bytes",
                           "Largest message bizon publishes; bigger iterations are cut into "
                           "several.",
                           8388608, 1024),
                RabbitmqTls()}},
          {.name = "consumer",
           .type = FieldType::kObject,
           .default_value = Value::EmptyMap(),
           .fields = {{.name = "poll_interval",
                       .type = FieldType::kNumber,
                       .description = "Kept for compatibility (unused).",
                       .default_value = Value(1)},
                      {.name = "prefetch_count",
                       .type = FieldType::kInteger,
                       .description = "basic.qos prefetch the consumer starts with; it grows "
                                      "while the unacknowledged messages hold less than "
                                      "prefetch_bytes.",
                       .default_value = Value(64),
                       .minimum = 1,
                       .maximum = 65535},
                      byte_limit("prefetch_bytes",
                                 "Bytes of unacknowledged messages the consumer may hold.",
                                 134217728, 1048576)}},
          unused_message_count,
          unconsumed_bytes}};
  auto variant = [](std::string tag, std::string description, FieldSpec config) {
    return VariantSpec{.tag = std::move(tag),
                       .description = std::move(description),
                       .fields = {{.name = "type", .type = FieldType::kString}, std::move(config)},
                       .unknown_keys = UnknownKeys::kError};
  };
  Value default_queue = Value::EmptyMap();
  default_queue.Set("type", "python_queue");
  return {.name = "queue",
          .type = FieldType::kObject,
          .description = "How records travel from producer to consumer.",
          .default_value = default_queue,
          .discriminator = "type",
          .variants = {variant("python_queue", "In-process bounded queue (the default).",
                               std::move(python_config)),
                       variant("kafka", "A Kafka topic.", std::move(kafka_config)),
                       variant("rabbitmq", "A RabbitMQ queue.", std::move(rabbitmq_config))},
          .default_variant = "python_queue"};
}

FieldSpec RunnerField() {
  return {
      .name = "runner",
      .type = FieldType::kObject,
      .description = "How producer and consumer execute.",
      .default_value = Value::EmptyMap(),
      .fields =
          {
              {.name = "type",
               .type = FieldType::kEnum,
               .description = "thread (default), process (separate processes) or stream (inline).",
               .default_value = Value("thread"),
               .enum_values = {"thread", "process", "stream"}},
              {.name = "config",
               .type = FieldType::kObject,
               .default_value = Value::EmptyMap(),
               .fields = {{.name = "max_workers",
                           .type = FieldType::kInteger,
                           .description = "Worker processes for transforms (process runner).",
                           .default_value = Value(2),
                           .minimum = 1},
                          {.name = "python_timeout",
                           .type = FieldType::kNumber,
                           .description =
                               "Seconds one call into a custom Python source, or the transforms "
                               "of one record, may run before the run fails; 0: no limit.",
                           .default_value = Value(300),
                           .minimum = 0},
                          {.name = "python_env",
                           .type = FieldType::kString,
                           .description =
                               "Virtualenv (made with /usr/bin/python3 -m venv) whose packages "
                               "custom sources and transforms import ahead of bizon's own; "
                               "empty: the active one ($VIRTUAL_ENV), if any.",
                           .default_value = Value("")},
                          {.name = "consumer_start_delay",
                           .type = FieldType::kNumber,
                           .description = "Kept for compatibility; the consumer starts at once.",
                           .default_value = Value(2)},
                          {.name = "is_alive_check_interval",
                           .type = FieldType::kNumber,
                           .description = "Kept for compatibility; failures are signalled at once.",
                           .default_value = Value(2)}},
               .unknown_keys = UnknownKeys::kIgnore},
              {.name = "log_level",
               .type = FieldType::kEnum,
               .description = "Log verbosity.",
               .default_value = Value("INFO"),
               .enum_values = {"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}},
          },
      .unknown_keys = UnknownKeys::kIgnore};
}

FieldSpec RecordSchemasField() {
  return {
      .name = "record_schemas",
      .type = FieldType::kList,
      .description = "Columns per destination id, used when unnest is true.",
      .items = {{.type = FieldType::kObject,
                 .fields = {
                     {.name = "destination_id", .type = FieldType::kString, .required = true},
                     {.name = "record_schema",
                      .type = FieldType::kList,
                      .required = true,
                      .items = {{.type = FieldType::kObject,
                                 .fields = {
                                     {.name = "name", .type = FieldType::kString, .required = true},
                                     {.name = "type", .type = FieldType::kString, .required = true},
                                     String("description", "")}}}}}}}};
}

FieldSpec HttpField() {
  return {
      .name = "http",
      .type = FieldType::kObject,
      .description = "Opt-in HTTP policy; without it the historical policy applies.",
      .fields = {
          {.name = "timeout",
           .type = FieldType::kAny,
           .description = "Connect and read timeouts in seconds, or one number for both.",
           .default_value = Value(Value::List{Value(10), Value(60)}),
           .one_of = {{.type = FieldType::kNumber, .description = "a number of seconds"},
                      {.type = FieldType::kList,
                       .description = "a [connect, read] pair",
                       .items = {{.type = FieldType::kNumber}}}}},
          {.name = "raise_for_status",
           .type = FieldType::kBoolean,
           .description = "Fail on 4xx/5xx responses.",
           .default_value = Value(true)},
          {.name = "retries",
           .type = FieldType::kObject,
           .default_value = Value::EmptyMap(),
           .fields =
               {
                   {.name = "total",
                    .type = FieldType::kInteger,
                    .default_value = Value(10),
                    .minimum = 0},
                   {.name = "backoff_factor",
                    .type = FieldType::kNumber,
                    .default_value = Value(2),
                    .minimum = 0},
                   {.name = "status_forcelist",
                    .type = FieldType::kList,
                    .default_value = Value(Value::List{429, 500, 502, 503, 504, 520, 522, 524}),
                    .items = {{.type = FieldType::kInteger}}},
                   {.name = "allowed_methods",
                    .type = FieldType::kList,
                    .default_value = Value(Value::List{"GET", "POST"}),
                    .items = {{.type = FieldType::kString}}},
                   {.name = "retry_after_max",
                    .type = FieldType::kNumber,
                    .description = "Cap on a Retry-After wait; null honours the header as sent.",
                    .null_is_value = true,
                    .default_value = Value(120)},
               }},
      }};
}

}  // namespace

FieldSpec AuthenticationField(const std::vector<std::string>& types, bool required) {
  FieldSpec field = {.name = "authentication",
                     .type = FieldType::kObject,
                     .description = "How the source authenticates: type and params.",
                     .required = required,
                     .discriminator = "type"};
  for (const std::string& type : types) field.variants.push_back(AuthVariant(type));
  return field;
}

std::vector<FieldSpec> CommonSourceFields() {
  return {
      {.name = "name",
       .type = FieldType::kString,
       .description = "Connector name.",
       .required = true},
      {.name = "stream",
       .type = FieldType::kString,
       .description = "Stream to sync.",
       .required = true},
      {.name = "sync_mode",
       .type = FieldType::kEnum,
       .description = "full_refresh (default), incremental or stream.",
       .default_value = Value("full_refresh"),
       .enum_values = {"full_refresh", "incremental", "stream"}},
      String("cursor_field", "Timestamp field the source filters incremental reads on."),
      AuthenticationField({"oauth", "api_key", "bearer", "basic", "cookies"}, false),
      {.name = "force_ignore_checkpoint",
       .type = FieldType::kBoolean,
       .description = "Ignore checkpoints and restart from iteration 0.",
       .default_value = Value(false)},
      {.name = "reset",
       .type = FieldType::kBoolean,
       .description = "Re-fetch the whole stream and replace the destination table.",
       .default_value = Value(false),
       .deprecated = "it resets on every run until removed; use `bizon run --reset` or "
                     "`bizon stream reset` instead"},
      {.name = "max_iterations",
       .type = FieldType::kInteger,
       .description = "Stop after this iteration index (0 or null: until exhausted).",
       .minimum = 0},
      {.name = "api_config",
       .type = FieldType::kObject,
       .description = "API call settings.",
       .default_value = Value(Value::Map{{"retry_limit", Value(10)}}),
       .fields = {{.name = "retry_limit",
                   .type = FieldType::kInteger,
                   .description = "Retries before giving up on an API call.",
                   .default_value = Value(100),
                   .minimum = 0}}},
      String("source_file_path", "Custom Python source file (same as --custom-source)."),
      {.name = "init_pipeline",
       .type = FieldType::kBoolean,
       .description = "Kept for compatibility.",
       .default_value = Value(true)},
      HttpField(),
  };
}

std::vector<FieldSpec> CommonDestinationFields() {
  return {
      {.name = "buffer_size",
       .type = FieldType::kNumber,
       .description = "Buffer size in MB; 0 writes every iteration at once.",
       .default_value = Value(50),
       .minimum = 0},
      {.name = "buffer_flush_timeout",
       .type = FieldType::kNumber,
       .description = "Seconds after which a buffer is written even if not full; 0 disables.",
       .default_value = Value(600),
       .minimum = 0},
      {.name = "max_concurrent_threads",
       .type = FieldType::kInteger,
       .description = "Parallel writes, for destinations that support them.",
       .default_value = Value(10),
       .minimum = 1},
      RecordSchemasField(),
      {.name = "unnest",
       .type = FieldType::kBoolean,
       .description = "Write the record_schemas columns instead of the raw payload.",
       .default_value = Value(false)},
      {.name = "authentication",
       .type = FieldType::kMap,
       .description = "Destination credentials.",
       .secret = true},
      String("destination_id", "Where to write (file stem, table name)."),
  };
}

FieldSpec PipelineSpec(const ConnectorRegistry& registry, std::string_view custom_source_name) {
  FieldSpec source = {.name = "source",
                      .type = FieldType::kObject,
                      .description = "The source connector and stream.",
                      .required = true,
                      .discriminator = "name"};
  if (!custom_source_name.empty()) {
    // A custom Python source validates its own keys against its config class.
    source.variants.push_back({.tag = std::string(custom_source_name),
                               .description = "A custom Python source.",
                               .fields = CommonSourceFields(),
                               .unknown_keys = UnknownKeys::kAllow});
  }
  for (const SourceDescriptor* descriptor : registry.sources()) {
    if (descriptor->name == custom_source_name) continue;
    VariantSpec variant{.tag = descriptor->name,
                        .description = descriptor->description,
                        .unknown_keys = descriptor->config.unknown_keys};
    SourceVariantFields(*descriptor, variant);
    source.variants.push_back(std::move(variant));
  }

  FieldSpec destination = {.name = "destination",
                           .type = FieldType::kObject,
                           .description = "The destination connector.",
                           .required = true,
                           .discriminator = "name"};
  for (const DestinationDescriptor* descriptor : registry.destinations()) {
    std::vector<FieldSpec> config_fields = CommonDestinationFields();
    for (const FieldSpec& own : descriptor->config.fields) {
      auto existing = std::find_if(config_fields.begin(), config_fields.end(),
                                   [&](const FieldSpec& f) { return f.name == own.name; });
      if (existing != config_fields.end()) {
        *existing = own;
      } else {
        config_fields.push_back(own);
      }
    }
    destination.variants.push_back(
        {.tag = descriptor->name,
         .description = descriptor->description,
         .fields = {{.name = "name", .type = FieldType::kString, .required = true},
                    {.name = "alias",
                     .type = FieldType::kString,
                     .description = "Name used as the system type in metrics.",
                     .default_value = Value(descriptor->alias)},
                    {.name = "config",
                     .type = FieldType::kObject,
                     .description = "Destination settings.",
                     .required = true,
                     .fields = std::move(config_fields),
                     .unknown_keys = descriptor->config.unknown_keys}},
         .unknown_keys = UnknownKeys::kError});
  }

  FieldSpec transforms = {
      .name = "transforms",
      .type = FieldType::kList,
      .description = "Python snippets applied in order to each record's `data`.",
      .default_value = Value::EmptyList(),
      .items = {{.type = FieldType::kObject,
                 .fields = {{.name = "label",
                             .type = FieldType::kString,
                             .description = "Name shown in errors.",
                             .required = true},
                            {.name = "python",
                             .type = FieldType::kString,
                             .description = "Code run with the record bound to `data`.",
                             .required = true}}}}};

  FieldSpec engine = {.name = "engine",
                      .type = FieldType::kObject,
                      .description = "Backend, queue and runner.",
                      .default_value = Value::EmptyMap(),
                      .fields = {BackendField(), QueueField(), RunnerField()}};

  FieldSpec secrets = {
      .name = "secrets",
      .type = FieldType::kObject,
      .description = "Defaults for reference providers.",
      .fields = {{.name = "gsm",
                  .type = FieldType::kObject,
                  .fields = {String("project_id", "GCP project of gsm:// references.")}}}};

  FieldSpec monitoring = {
      .name = "monitoring",
      .type = FieldType::kObject,
      .description = "Metrics and tracing.",
      .fields = {
          {.name = "type",
           .type = FieldType::kEnum,
           .description = "datadog (DogStatsD and the agent's trace intake) or otel (OTLP/HTTP).",
           .required = true,
           .enum_values = {"datadog", "otel"}},
          {.name = "enable_tracing",
           .type = FieldType::kBoolean,
           .description = "Kept for compatibility; config.enable_tracing is the one read."},
          {.name = "config",
           .type = FieldType::kObject,
           .description = "Required for datadog; optional for otel (tags, enable_tracing).",
           .fields = {
               {.name = "enable_tracing",
                .type = FieldType::kBoolean,
                .description = "Send one span per iteration (otel: default true)."},
               String("datadog_agent_host", "DogStatsD host."),
               String("datadog_host_env_var", "Variable holding the DogStatsD host."),
               {.name = "datadog_agent_port",
                .type = FieldType::kInteger,
                .default_value = Value(8125)},
               {.name = "tags", .type = FieldType::kMap, .default_value = Value::EmptyMap()}}}}};

  FieldSpec alerting = {
      .name = "alerting",
      .type = FieldType::kObject,
      .description = "Slack alerts.",
      .fields =
          {{.name = "type", .type = FieldType::kEnum, .required = true, .enum_values = {"slack"}},
           {.name = "log_levels",
            .type = FieldType::kList,
            .default_value = Value(Value::List{"ERROR"}),
            .items = {{.type = FieldType::kEnum,
                       .enum_values = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}}}},
           {.name = "config",
            .type = FieldType::kObject,
            .required = true,
            .fields = {Secret("webhook_url", "Slack incoming webhook URL.", true)}}},
      .unknown_keys = UnknownKeys::kIgnore};

  FieldSpec streams = {
      .name = "streams",
      .type = FieldType::kList,
      .description = "Multi-stream routing (requires sync_mode: stream).",
      .items = {{.type = FieldType::kObject,
                 .fields = {
                     {.name = "name", .type = FieldType::kString, .required = true},
                     {.name = "source",
                      .type = FieldType::kObject,
                      .fields = {String("name", ""), String("topic", ""), String("endpoint", "")},
                      .unknown_keys = UnknownKeys::kAllow},
                     {.name = "destination",
                      .type = FieldType::kObject,
                      .required = true,
                      .fields = {{.name = "table_id", .type = FieldType::kString, .required = true},
                                 {.name = "record_schema", .type = FieldType::kList},
                                 StringList("clustering_keys", "")},
                      .unknown_keys = UnknownKeys::kAllow}}}}};

  return {.name = "",
          .type = FieldType::kObject,
          .description = "A bizon pipeline.",
          .fields = {{.name = "name",
                      .type = FieldType::kString,
                      .description = "Unique name of this sync.",
                      .required = true},
                     {.name = "id",
                      .type = FieldType::kString,
                      .description = "Stable identity for backend state; defaults to name."},
                     std::move(source),
                     std::move(destination),
                     std::move(transforms),
                     std::move(engine),
                     std::move(secrets),
                     std::move(monitoring),
                     std::move(alerting),
                     std::move(streams)},
          .unknown_keys = UnknownKeys::kError};
}

namespace {

/// Hands every destination id the config names to the destination's own check (file paths that
/// would leave the working directory, PostgreSQL names too long to stage...), so that
/// `config validate` refuses it, not the first write.
/// The destination's own rules across its options (check_config), each reported at the
/// option's line (or its nearest written parent's).
void CheckDestinationRules(const ConnectorRegistry& registry, const Value& raw,
                           ValidationResult& result) {
  const Value& config = result.normalized;
  const Value* name = config.FindPath("destination.name");
  const DestinationDescriptor* destination =
      registry.FindDestination(name != nullptr ? name->ToDisplayString() : "");
  const Value* options = config.FindPath("destination.config");
  if (destination == nullptr || !destination->check_config || options == nullptr) return;
  const Value* mode = config.FindPath("source.sync_mode");
  SyncMode sync_mode = ParseSyncMode(mode != nullptr ? mode->ToDisplayString() : "")
                           .value_or(SyncMode::kFullRefresh);
  for (const ConfigRuleViolation& violation : destination->check_config(*options, sync_mode)) {
    std::string path = "destination.config." + violation.path;
    // Dotted lookups do not index lists: walk up to the nearest node the YAML has.
    std::string probe = path.substr(0, path.find('['));
    const Value* node = raw.FindPath(probe);
    while (node == nullptr && probe.find('.') != std::string::npos) {
      probe.resize(probe.rfind('.'));
      node = raw.FindPath(probe);
    }
    AddDiagnostic(result, Diagnostic::Severity::kError, path,
                  node != nullptr ? node->mark() : SourceMark{}, violation.message);
  }
}

void CheckStaticDestinationIds(const ConnectorRegistry& registry, const Value& raw,
                               ValidationResult& result) {
  const Value& config = result.normalized;
  const DestinationDescriptor* destination =
      registry.FindDestination(config.FindPath("destination.name") != nullptr
                                   ? config.FindPath("destination.name")->ToDisplayString()
                                   : "");
  if (destination == nullptr || !destination->check_destination_id) return;
  const Value* mode = config.FindPath("source.sync_mode");
  SyncMode sync_mode = ParseSyncMode(mode != nullptr ? mode->ToDisplayString() : "")
                           .value_or(SyncMode::kFullRefresh);
  auto check = [&](const Value* id, const std::string& path, SourceMark mark) {
    if (id == nullptr || !id->is_string() || id->AsString().empty()) return false;
    if (Status checked = destination->check_destination_id(id->AsString(), sync_mode);
        !checked.ok()) {
      AddDiagnostic(result, Diagnostic::Severity::kError, path, mark, checked.message());
    }
    return true;
  };
  auto mark_of = [&](const std::string& path) {
    const Value* node = raw.FindPath(path);
    return node != nullptr ? node->mark() : SourceMark{};
  };
  bool named = false;
  std::vector<std::string> keys = destination->destination_id_keys;
  keys.insert(keys.begin(), "destination_id");
  for (const std::string& key : keys) {
    std::string path = "destination.config." + key;
    named |= check(config.FindPath(path), path, mark_of(path));
  }
  const Value* unnest = config.FindPath("destination.config.unnest");
  bool unnested = unnest != nullptr && unnest->is_bool() && unnest->AsBool();
  if (const Value* stream = config.FindPath("source.stream"); !named && !unnested && stream) {
    // The default id; with unnest the ids are the record_schemas ones, checked below.
    Value id(config.FindPath("source.name") != nullptr
                 ? config.FindPath("source.name")->ToDisplayString() + "_" +
                       stream->ToDisplayString()
                 : stream->ToDisplayString());
    check(&id, "source.stream", mark_of("source.stream"));
  }
  // Lists: each item's own mark, since the dotted path lookup does not index lists.
  auto check_list = [&](const Value* list, const std::string& list_path, std::string_view key) {
    if (list == nullptr || !list->is_list()) return;
    for (size_t i = 0; i < list->AsList().size(); ++i) {
      const Value& item = list->AsList()[i];
      check(item.FindPath(key), fmt::format("{}[{}].{}", list_path, i, key), item.mark());
    }
  };
  check_list(config.FindPath("destination.config.record_schemas"),
             "destination.config.record_schemas", "destination_id");
  check_list(config.Find("streams"), "streams", "destination.table_id");
  check_list(config.FindPath("source.topics"), "source.topics", "destination_id");
}

}  // namespace

void CheckPipelineRules(const ConnectorRegistry& registry, const Value& raw,
                        ValidationResult& result) {
  CheckStaticDestinationIds(registry, raw, result);
  CheckDestinationRules(registry, raw, result);
  const Value& config = result.normalized;
  auto mark_of = [&](std::string_view path) {
    const Value* node = raw.FindPath(path);
    return node != nullptr ? node->mark() : SourceMark{};
  };
  auto error = [&](std::string path, std::string message) {
    SourceMark mark = mark_of(path);
    AddDiagnostic(result, Diagnostic::Severity::kError, std::move(path), mark, std::move(message));
  };
  auto warning = [&](std::string path, std::string message) {
    SourceMark mark = mark_of(path);
    AddDiagnostic(result, Diagnostic::Severity::kWarning, std::move(path), mark,
                  std::move(message));
  };

  std::string sync_mode = config.FindPath("source.sync_mode") != nullptr
                              ? config.FindPath("source.sync_mode")->ToDisplayString()
                              : "full_refresh";
  std::string source_name =
      raw.FindPath("source.name") != nullptr ? raw.FindPath("source.name")->ToDisplayString() : "";
  std::string destination_name = raw.FindPath("destination.name") != nullptr
                                     ? raw.FindPath("destination.name")->ToDisplayString()
                                     : "";

  // Streams routing.
  if (const Value* streams = config.Find("streams");
      streams != nullptr && streams->is_list() && !streams->AsList().empty()) {
    std::set<std::string> names;
    std::set<std::string> tables;
    const auto& list = streams->AsList();
    for (size_t i = 0; i < list.size(); ++i) {
      std::string item_path = fmt::format("streams[{}]", i);
      std::string name = list[i].GetString("name");
      if (!names.insert(name).second) {
        AddDiagnostic(result, Diagnostic::Severity::kError, item_path + ".name", list[i].mark(),
                      fmt::format("duplicate stream name '{}'", name));
      }
      const Value* destination = list[i].Find("destination");
      std::string table = destination != nullptr ? destination->GetString("table_id") : "";
      if (!table.empty()) {
        if (!tables.insert(table).second) {
          AddDiagnostic(result, Diagnostic::Severity::kError, item_path + ".destination.table_id",
                        destination->mark(), fmt::format("duplicate table_id '{}'", table));
        }
        size_t parts = static_cast<size_t>(std::count(table.begin(), table.end(), '.')) + 1;
        if (parts != 3) {
          AddDiagnostic(result, Diagnostic::Severity::kError, item_path + ".destination.table_id",
                        destination->mark(),
                        fmt::format("table_id must look like 'project.dataset.table', got '{}' "
                                    "({} parts)",
                                    table, parts));
        }
      }
    }
    if (sync_mode != "stream") {
      error("streams", fmt::format("the streams block requires source.sync_mode: stream, got '{}'",
                                   sync_mode));
    }
  }

  // Incremental needs a source that can read a window; a reset needs a replacing destination.
  const SourceDescriptor* source = registry.FindSource(source_name);
  bool custom_source = config.FindPath("source.source_file_path") != nullptr &&
                       !config.FindPath("source.source_file_path")->is_null();
  // Stream names the config itself declares (rest_api endpoints).
  if (const Value* source_config = config.Find("source");
      source != nullptr && !custom_source && source->check_stream && source_config != nullptr &&
      source_config->is_map() && !source_config->GetString("stream").empty()) {
    if (Status checked = source->check_stream(*source_config, source_config->GetString("stream"));
        !checked.ok()) {
      error("source.stream", checked.message());
    }
  }
  if (source != nullptr && !custom_source && sync_mode == "incremental") {
    std::string stream = raw.FindPath("source.stream") != nullptr
                             ? raw.FindPath("source.stream")->ToDisplayString()
                             : "";
    for (const StreamSpec& spec : source->streams) {
      if (spec.name == stream && !spec.supports_incremental) {
        warning("source.sync_mode",
                fmt::format("stream '{}' of source '{}' does not support incremental sync; "
                            "`bizon run` refuses it (the original would re-read everything on "
                            "its first run and fail on the second)",
                            stream, source_name));
      }
    }
  }
  const DestinationDescriptor* destination = registry.FindDestination(destination_name);
  const Value* reset = config.FindPath("source.reset");
  if (destination != nullptr && !destination->supports_reset && reset != nullptr &&
      reset->is_bool() && reset->AsBool() && sync_mode == "incremental") {
    error("source.reset", fmt::format("source.reset is not supported by destination '{}', which "
                                      "appends to its table instead of replacing it",
                                      destination_name));
  }

  // unnest needs schemas.
  const Value* unnest = config.FindPath("destination.config.unnest");
  const Value* schemas = config.FindPath("destination.config.record_schemas");
  bool has_streams_schemas = false;
  if (const Value* streams = config.Find("streams"); streams != nullptr && streams->is_list()) {
    for (const Value& stream : streams->AsList()) {
      if (stream.FindPath("destination.record_schema") != nullptr) has_streams_schemas = true;
    }
  }
  if (unnest != nullptr && unnest->is_bool() && unnest->AsBool() && !has_streams_schemas &&
      (schemas == nullptr || !schemas->is_list() || schemas->AsList().empty())) {
    error("destination.config.unnest",
          "unnest: true needs at least one entry in destination.config.record_schemas");
  }

  // Datadog needs a config block with a host; otel is configured by the OTEL_* variables.
  const Value* monitoring_type = config.FindPath("monitoring.type");
  bool datadog = monitoring_type != nullptr && monitoring_type->is_string() &&
                 monitoring_type->AsString() == "datadog";
  const Value* monitoring_config = config.FindPath("monitoring.config");
  if (datadog && (monitoring_config == nullptr || monitoring_config->is_null())) {
    error("monitoring", "monitoring.config is required for type datadog");
  }
  if (datadog && monitoring_config != nullptr && monitoring_config->is_map()) {
    const Value* host = monitoring_config->Find("datadog_agent_host");
    const Value* host_env = monitoring_config->Find("datadog_host_env_var");
    if ((host == nullptr || host->is_null()) && (host_env == nullptr || host_env->is_null())) {
      error("monitoring.config",
            "either datadog_agent_host or datadog_host_env_var must be specified");
    }
  }
}

}  // namespace bizon
