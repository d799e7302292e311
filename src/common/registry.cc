#include "bizon/registry.h"

#include <fmt/format.h>

namespace bizon {

Status ConnectorRegistry::AddSource(SourceDescriptor descriptor) {
  if (descriptor.name.empty() || descriptor.streams.empty()) {
    return InternalError("a source must have a name and at least one stream");
  }
  std::string name = descriptor.name;
  if (!sources_.emplace(name, std::move(descriptor)).second) {
    return InternalError(fmt::format("source '{}' is registered twice", name));
  }
  return Status::Ok();
}

Status ConnectorRegistry::AddDestination(DestinationDescriptor descriptor) {
  if (descriptor.name.empty()) return InternalError("a destination must have a name");
  std::string name = descriptor.name;
  if (!destinations_.emplace(name, std::move(descriptor)).second) {
    return InternalError(fmt::format("destination '{}' is registered twice", name));
  }
  return Status::Ok();
}

const SourceDescriptor* ConnectorRegistry::FindSource(std::string_view name) const {
  auto it = sources_.find(name);
  return it == sources_.end() ? nullptr : &it->second;
}

const DestinationDescriptor* ConnectorRegistry::FindDestination(std::string_view name) const {
  auto it = destinations_.find(name);
  return it == destinations_.end() ? nullptr : &it->second;
}

std::vector<const SourceDescriptor*> ConnectorRegistry::sources() const {
  std::vector<const SourceDescriptor*> out;
  out.reserve(sources_.size());
  for (const auto& [name, descriptor] : sources_) out.push_back(&descriptor);
  return out;
}

std::vector<const DestinationDescriptor*> ConnectorRegistry::destinations() const {
  std::vector<const DestinationDescriptor*> out;
  out.reserve(destinations_.size());
  for (const auto& [name, descriptor] : destinations_) out.push_back(&descriptor);
  return out;
}

void ConnectorRegistry::AddUnbuilt(std::string name, std::string family) {
  unbuilt_.insert_or_assign(std::move(name), std::move(family));
}

std::string_view ConnectorRegistry::UnbuiltFamily(std::string_view name) const {
  auto it = unbuilt_.find(name);
  return it == unbuilt_.end() ? std::string_view() : std::string_view(it->second);
}

std::string_view ToString(SyncMode mode) {
  switch (mode) {
    case SyncMode::kFullRefresh:
      return "full_refresh";
    case SyncMode::kIncremental:
      return "incremental";
    case SyncMode::kStream:
      return "stream";
  }
  return "full_refresh";
}

Result<SyncMode> ParseSyncMode(std::string_view text) {
  if (text == "full_refresh") return SyncMode::kFullRefresh;
  if (text == "incremental") return SyncMode::kIncremental;
  if (text == "stream") return SyncMode::kStream;
  return Fail(InvalidArgumentError(
      fmt::format("expected one of full_refresh, incremental, stream, got '{}'", text)));
}

}  // namespace bizon
