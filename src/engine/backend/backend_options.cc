#include "engine/backend/backend_options.h"

#include <utility>
#include <vector>

#include "postgres/postgres_client.h"

namespace bizon {
namespace {

FieldSpec BackendConfig(bool postgres) {
  std::vector<FieldSpec> fields = {
      Option::String("database",
                     "Database name; for sqlite the file is <database>.sqlite3 in the working "
                     "directory; for bigquery the GCP project.")
          .Required(),
      Option::String("schema", "Schema (dataset for bigquery) holding the state tables.")
          .Required(),
      Option::Integer("syncCursorInDBEvery",
                      "Write the source cursor to the backend every N iterations.")
          .Default(10)
          .Minimum(1),
      Option::Boolean("echoEngine", "The original's SQLAlchemy statement log.")
          .Default(false)
          .NoEffect("there is no SQLAlchemy engine to echo; `--log-level DEBUG` logs the "
                    "backend's work"),
  };
  if (postgres) {
    fields.push_back(Option::String("host", "PostgreSQL host.").Required());
    fields.push_back(
        Option::Integer("port", "PostgreSQL port.").Required().Minimum(1).Maximum(65535));
    fields.push_back(Option::String("username", "PostgreSQL user.").Required());
    fields.push_back(Option::String("password", "PostgreSQL password.").Required().Secret());
    for (FieldSpec& tls : PgTlsFields()) fields.push_back(std::move(tls));
  }
  return Option::Object("config", std::move(fields), "Connection settings of the backend.")
      .Required()
      .OnUnknownKeys(UnknownKeys::kIgnore);
}

/// The duckdb backend's: `database` is the file itself (shared with a duckdb destination naming
/// it), `schema` defaults to DuckDB's own.
FieldSpec DuckdbBackendConfig() {
  FieldSpec config = BackendConfig(false);
  for (FieldSpec& field : config.fields) {
    if (field.name == "database") {
      field.description =
          "The DuckDB database file, relative to the working directory unless absolute; a "
          "duckdb destination naming the same file keeps its rows beside the state.";
    } else if (field.name == "schema") {
      field.description = "Schema holding the state tables; created when missing.";
      field.required = false;
      field.default_value = Value("main");
    }
  }
  return config;
}

VariantSpec BackendVariant(std::string tag, std::string description, FieldSpec config) {
  return {.tag = std::move(tag),
          .description = std::move(description),
          .fields = {Option::String("type"), std::move(config)},
          .unknown_keys = UnknownKeys::kIgnore};
}

}  // namespace

FieldSpec BackendField() {
  FieldSpec bigquery_config = BackendConfig(false);
  bigquery_config.fields.push_back(
      Option::Boolean("create_schema", "Create the dataset when it is missing.").Default(false));
  bigquery_config.fields.push_back(
      Option::String("schema_location", "Location of a created dataset."));
  bigquery_config.fields.push_back(
      Option::String("service_account_key", "Service account JSON.").Secret());
  // The required keys only: validation fills in the rest from the declarations above.
  Value default_backend(
      Value::Map{{"type", "sqlite"},
                 {"config", Value(Value::Map{{"database", "bizon"}, {"schema", "public"}})}});
  return Option::Variants(
             "backend", "type",
             {BackendVariant("sqlite", "A SQLite file (the default).", BackendConfig(false)),
              BackendVariant("sqlite_in_memory", "A private in-memory SQLite database.",
                             BackendConfig(false)),
              BackendVariant("postgres", "PostgreSQL.", BackendConfig(true)),
              BackendVariant("bigquery", "BigQuery tables.", std::move(bigquery_config)),
              BackendVariant("duckdb",
                             "A DuckDB file, which one process at a time can open (see "
                             "src/engine/backend/README.md).",
                             DuckdbBackendConfig())},
             "Where jobs and cursors are stored.")
      .Default(std::move(default_backend))
      .DefaultVariant("sqlite");
}

std::string BackendType(const Value& backend) {
  return OptionReader(BackendField(), backend).Variant();
}

Result<int64_t> ReadSyncCursorEvery(const Value& backend) {
  OptionReader config = OptionReader(BackendField(), backend).Object("config");
  int64_t every = config.Integer("syncCursorInDBEvery");
  BIZON_RETURN_IF_ERROR(config.status());
  return every;
}

}  // namespace bizon
