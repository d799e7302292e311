#include "connectors/registration.h"

namespace bizon {

Status RegisterBuiltinConnectors(ConnectorRegistry& registry) {
  BIZON_RETURN_IF_ERROR(RegisterDummySource(registry));
  BIZON_RETURN_IF_ERROR(RegisterGeneratorSource(registry));
  BIZON_RETURN_IF_ERROR(RegisterHubspotSource(registry));
  BIZON_RETURN_IF_ERROR(RegisterNotionSource(registry));
  BIZON_RETURN_IF_ERROR(RegisterKafkaSource(registry));
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
  BIZON_RETURN_IF_ERROR(RegisterPostgresDestination(registry));
  BIZON_RETURN_IF_ERROR(RegisterDuckdbDestination(registry));
  BIZON_RETURN_IF_ERROR(RegisterBigqueryDestination(registry));
  BIZON_RETURN_IF_ERROR(RegisterBigqueryStreamingDestination(registry));
  BIZON_RETURN_IF_ERROR(RegisterBigqueryStreamingV2Destination(registry));
  return Status::Ok();
}

}  // namespace bizon
