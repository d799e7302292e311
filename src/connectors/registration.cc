#include "connectors/registration.h"

#include "bizon/build_features.h"

namespace bizon {
namespace {

// The connectors of each optional family: registered when it is built, otherwise named to the
// registry as left out, so that a pipeline naming one is told which option builds it.
Status RegisterKafka(ConnectorRegistry& registry) {
#if BIZON_WITH_KAFKA
  return RegisterKafkaSource(registry);
#else
  registry.AddUnbuilt("kafka", "kafka");
  return Status::Ok();
#endif
}

Status RegisterPostgres(ConnectorRegistry& registry) {
#if BIZON_WITH_POSTGRES
  return RegisterPostgresDestination(registry);
#else
  registry.AddUnbuilt("postgres", "postgres");
  return Status::Ok();
#endif
}

Status RegisterDuckdb(ConnectorRegistry& registry) {
#if BIZON_WITH_DUCKDB
  return RegisterDuckdbDestination(registry);
#else
  registry.AddUnbuilt("duckdb", "duckdb");
  return Status::Ok();
#endif
}

Status RegisterBigquery(ConnectorRegistry& registry) {
#if BIZON_WITH_BIGQUERY
  BIZON_RETURN_IF_ERROR(RegisterBigqueryDestination(registry));
  BIZON_RETURN_IF_ERROR(RegisterBigqueryStreamingDestination(registry));
  return RegisterBigqueryStreamingV2Destination(registry);
#else
  for (const char* name : {"bigquery", "bigquery_streaming", "bigquery_streaming_v2"}) {
    registry.AddUnbuilt(name, "bigquery");
  }
  return Status::Ok();
#endif
}

}  // namespace

Status RegisterBuiltinConnectors(ConnectorRegistry& registry) {
  BIZON_RETURN_IF_ERROR(RegisterDummySource(registry));
  BIZON_RETURN_IF_ERROR(RegisterGeneratorSource(registry));
  BIZON_RETURN_IF_ERROR(RegisterHubspotSource(registry));
  BIZON_RETURN_IF_ERROR(RegisterNotionSource(registry));
  BIZON_RETURN_IF_ERROR(RegisterKafka(registry));
  BIZON_RETURN_IF_ERROR(RegisterGsheetsSource(registry));
  BIZON_RETURN_IF_ERROR(RegisterCycleSource(registry));
  BIZON_RETURN_IF_ERROR(RegisterPeriscopeSource(registry));
  BIZON_RETURN_IF_ERROR(RegisterSanaAiSource(registry));
  BIZON_RETURN_IF_ERROR(RegisterPokeapiSource(registry));
  BIZON_RETURN_IF_ERROR(RegisterGbifSource(registry));
  BIZON_RETURN_IF_ERROR(RegisterRestApiSource(registry));

  BIZON_RETURN_IF_ERROR(RegisterLoggerDestination(registry));
  BIZON_RETURN_IF_ERROR(RegisterFileDestination(registry));
  BIZON_RETURN_IF_ERROR(RegisterGcsDestination(registry));
  BIZON_RETURN_IF_ERROR(RegisterS3Destination(registry));
  BIZON_RETURN_IF_ERROR(RegisterPostgres(registry));
  BIZON_RETURN_IF_ERROR(RegisterDuckdb(registry));
  return RegisterBigquery(registry);
}

}  // namespace bizon
