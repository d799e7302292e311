// rest_api: a JSON API described in the pipeline's YAML alone. In the endpoints form, each entry
// of `endpoints` is a stream (its key is the `source.stream` name); in the resources form, every
// resource is read in one run (resources_source.h). See README.md and docs/rest_api.md.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "bizon/config_spec.h"
#include "bizon/registry.h"
#include "bizon/secret_mask.h"
#include "common/python_hooks.h"
#include "connectors/registration.h"
#include "connectors/sources/rest_api/resource_session.h"
#include "connectors/sources/rest_api/resources_source.h"
#include "connectors/sources/rest_api/rest_api_spec.h"
#include "connectors/sources/rest_api/rest_endpoint.h"

namespace bizon {
namespace {

class RestApiSource final : public Source {
 public:
  RestApiSource(RestEndpoint endpoint, std::string total_path)
      : endpoint_(std::move(endpoint)), total_path_(std::move(total_path)) {}

  std::optional<int64_t> TotalRecordsCount() override {
    if (total_path_.empty()) return std::nullopt;
    auto total = endpoint_.ReadFirstPage(total_path_);
    if (!total) {
      spdlog::warn("Could not read the total record count: {}", total.error().message());
      return std::nullopt;
    }
    if (!*total || !(*total)->is_number()) return std::nullopt;
    return static_cast<int64_t>((*total)->AsDouble());
  }

  Result<SourceIteration> Get(const Value& pagination) override {
    return endpoint_.Fetch(pagination);
  }

  Result<SourceIteration> GetRecordsAfter(const IncrementalState& state,
                                          const Value& pagination) override {
    return endpoint_.FetchAfter(state, pagination);
  }

 private:
  RestEndpoint endpoint_;
  std::string total_path_;
};

Result<std::unique_ptr<Source>> MakeEndpointSource(const SourceContext& context) {
  BIZON_ASSIGN_OR_RETURN(EndpointEntry entry, EndpointOf(context.config, context.stream));
  if (context.sync_mode == SyncMode::kIncremental && !entry.spec.incremental) {
    return Fail(InvalidArgumentError(
        fmt::format("source.endpoints.{}: an incremental run needs an incremental block (the query "
                    "parameter that receives the window start)",
                    context.stream)));
  }
  BIZON_ASSIGN_OR_RETURN(std::shared_ptr<HttpSession> session,
                         MakeResourceSession(context.config, nullptr));
  return std::make_unique<RestApiSource>(RestEndpoint(std::move(entry.spec), std::move(session)),
                                         std::move(entry.total_path));
}

// Compiles the hook of every `action: python`, before any request is sent.
Status CompileResponseHooks(std::vector<ResourceSpec>& resources) {
  for (ResourceSpec& resource : resources) {
    for (size_t i = 0; i < resource.response_actions.size(); ++i) {
      ResponseAction& action = resource.response_actions[i];
      if (action.action != ResponseAction::Kind::kPython) continue;
      std::string label =
          fmt::format("rest_api resource '{}' response_actions[{}]", resource.name, i);
      BIZON_ASSIGN_OR_RETURN(action.hook, CompilePythonHook(label, action.python, "on_response"));
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<Source>> MakeResourcesSource(const SourceContext& context) {
  BIZON_ASSIGN_OR_RETURN(std::vector<ResourceSpec> resources, ReadResources(context.config));
  BIZON_RETURN_IF_ERROR(CompileResponseHooks(resources));
  bool incremental = std::any_of(resources.begin(), resources.end(), [](const ResourceSpec& r) {
    return r.endpoint.incremental.has_value();
  });
  if (context.sync_mode == SyncMode::kIncremental && !incremental) {
    return Fail(InvalidArgumentError(
        "source.resources: an incremental run needs at least one resource with an incremental "
        "block"));
  }
  std::shared_ptr<HttpSession> shared;
  std::vector<std::shared_ptr<HttpSession>> sessions;
  for (const ResourceSpec& resource : resources) {
    if (resource.auth) {
      BIZON_ASSIGN_OR_RETURN(sessions.emplace_back(),
                             MakeResourceSession(context.config, &*resource.auth));
      continue;
    }
    if (!shared) {
      BIZON_ASSIGN_OR_RETURN(shared, MakeResourceSession(context.config, nullptr));
    }
    sessions.push_back(shared);
    if (context.sync_mode == SyncMode::kIncremental && !resource.endpoint.incremental &&
        !resource.parent) {
      spdlog::info("rest_api resource '{}' has no incremental block: every run reads it whole",
                   resource.name);
    }
  }
  return std::make_unique<ResourcesSource>(std::move(resources), std::move(sessions));
}

bool HasResources(const Value& source) {
  const Value* resources = source.Find("resources");
  return resources != nullptr && resources->is_list() && !resources->AsList().empty();
}

}  // namespace

Status RegisterRestApiSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "rest_api",
      .description = "Any JSON API over HTTP, described in YAML: endpoints, pagination, auth.",
      .streams = {{.name = "endpoint",
                   .supports_incremental = true,
                   .description = "Example: stream names are the keys of `endpoints`."}},
      .streams_from_config = true,
      .check_stream =
          [](const Value& source_config, const std::string& stream) {
            // The resources form reads every resource: the stream only names the run.
            if (HasResources(source_config)) return Status::Ok();
            auto endpoint = EndpointOf(source_config, stream);
            return endpoint ? Status::Ok() : endpoint.error();
          },
      .config = RestApiConfig(),
      .check_pipeline =
          [](const Value& config) {
            std::vector<ConfigRuleViolation> violations;
            const Value* source = config.Find("source");
            if (source == nullptr) return violations;
            for (ConfigRuleViolation& violation : CheckResources(*source)) {
              violation.path = violation.path.empty() ? "source" : "source." + violation.path;
              violations.push_back(std::move(violation));
            }
            return violations;
          },
      .factory = [](const SourceContext& context) -> Result<std::unique_ptr<Source>> {
        if (HasResources(context.config)) return MakeResourcesSource(context);
        return MakeEndpointSource(context);
      },
  });
}

}  // namespace bizon
