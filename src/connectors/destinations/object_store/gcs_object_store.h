// The Google Cloud Storage implementation of ObjectStore, over the project's GcsClient (JSON API;
// the emulator when STORAGE_EMULATOR_HOST is set). Copy is a server-side objects.rewrite.
#pragma once

#include <memory>
#include <string>

#include "connectors/destinations/object_store/object_store.h"
#include "google/gcs_client.h"

namespace bizon {

/// A store over `client` for `bucket`.
std::unique_ptr<ObjectStore> MakeGcsObjectStore(std::shared_ptr<GcsClient> client,
                                                std::string bucket);

}  // namespace bizon
