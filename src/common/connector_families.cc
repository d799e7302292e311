#include "common/connector_families.h"

#include <fmt/format.h>

#include <array>
#include <vector>

#include "bizon/build_features.h"

namespace bizon {
namespace {

constexpr std::array<ConnectorFamily, 6> kFamilies = {{
    {"kafka", "BIZON_WITH_KAFKA", BIZON_WITH_KAFKA == 1},
    {"bigquery", "BIZON_WITH_BIGQUERY", BIZON_WITH_BIGQUERY == 1},
    {"postgres", "BIZON_WITH_POSTGRES", BIZON_WITH_POSTGRES == 1},
    {"rabbitmq", "BIZON_WITH_RABBITMQ", BIZON_WITH_RABBITMQ == 1},
    {"python", "BIZON_WITH_PYTHON", BIZON_WITH_PYTHON == 1},
    {"duckdb", "BIZON_WITH_DUCKDB", BIZON_WITH_DUCKDB == 1},
}};

}  // namespace

std::span<const ConnectorFamily> ConnectorFamilies() { return kFamilies; }

const ConnectorFamily* FindConnectorFamily(std::string_view name) {
  for (const ConnectorFamily& family : kFamilies) {
    if (family.name == name) return &family;
  }
  return nullptr;
}

std::string DescribeConnectorFamilies() {
  std::vector<std::string_view> with;
  std::vector<std::string_view> without;
  for (const ConnectorFamily& family : kFamilies) {
    (family.built ? with : without).push_back(family.name);
  }
  std::string text =
      with.empty() ? "with no optional family" : fmt::format("with {}", fmt::join(with, ", "));
  if (!without.empty()) text += fmt::format("; without {}", fmt::join(without, ", "));
  return text;
}

Status NotBuiltError(std::string_view what, std::string_view family) {
  const ConnectorFamily* found = FindConnectorFamily(family);
  std::string option = found != nullptr ? std::string(found->option) : std::string(family);
  return Status(StatusCode::kUnimplemented,
                fmt::format("{} is not built into this binary: it was configured with {}=OFF; "
                            "rebuild with -D{}=ON",
                            what, option, option),
                FailureClass::kConfig);
}

}  // namespace bizon
