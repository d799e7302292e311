// One Register function per built-in connector; registration.cc calls them all, in order.
#pragma once

#include "bizon/registry.h"

namespace bizon {

/// Fills `registry` with every built-in connector, in the order below.
Status RegisterBuiltinConnectors(ConnectorRegistry& registry);

// Sources.
Status RegisterDummySource(ConnectorRegistry& registry);
Status RegisterGeneratorSource(ConnectorRegistry& registry);
Status RegisterHubspotSource(ConnectorRegistry& registry);
Status RegisterNotionSource(ConnectorRegistry& registry);
Status RegisterKafkaSource(ConnectorRegistry& registry);
Status RegisterGsheetsSource(ConnectorRegistry& registry);
Status RegisterCycleSource(ConnectorRegistry& registry);
Status RegisterPeriscopeSource(ConnectorRegistry& registry);
Status RegisterSanaAiSource(ConnectorRegistry& registry);
Status RegisterPokeapiSource(ConnectorRegistry& registry);
Status RegisterGbifSource(ConnectorRegistry& registry);
Status RegisterRestApiSource(ConnectorRegistry& registry);

// Destinations.
Status RegisterLoggerDestination(ConnectorRegistry& registry);
Status RegisterFileDestination(ConnectorRegistry& registry);
Status RegisterGcsDestination(ConnectorRegistry& registry);
Status RegisterS3Destination(ConnectorRegistry& registry);
Status RegisterPostgresDestination(ConnectorRegistry& registry);
Status RegisterDuckdbDestination(ConnectorRegistry& registry);
Status RegisterBigqueryDestination(ConnectorRegistry& registry);
Status RegisterBigqueryStreamingDestination(ConnectorRegistry& registry);
Status RegisterBigqueryStreamingV2Destination(ConnectorRegistry& registry);

}  // namespace bizon
