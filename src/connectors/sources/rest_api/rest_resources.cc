#include "connectors/sources/rest_api/rest_resources.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "connectors/sources/rest_api/rest_api_spec.h"
#include "http/url.h"

namespace bizon {
namespace {

constexpr std::string_view kPrefix = "{resources.";

struct Placeholder {
  std::string resource;
  std::string field;
};

// The placeholders of `text`, in order.
std::vector<Placeholder> PlaceholdersOf(std::string_view text) {
  std::vector<Placeholder> found;
  for (size_t at = text.find(kPrefix); at != std::string_view::npos;
       at = text.find(kPrefix, at + 1)) {
    size_t close = text.find('}', at);
    if (close == std::string_view::npos) break;
    std::string_view inner = text.substr(at + kPrefix.size(), close - at - kPrefix.size());
    size_t dot = inner.find('.');
    found.push_back({std::string(inner.substr(0, dot)),
                     dot == std::string_view::npos ? "" : std::string(inner.substr(dot + 1))});
  }
  return found;
}

void CollectPlaceholders(const Value& value, std::vector<Placeholder>& out) {
  if (value.is_string()) {
    for (Placeholder& placeholder : PlaceholdersOf(value.AsString())) {
      out.push_back(std::move(placeholder));
    }
  } else if (value.is_list()) {
    for (const Value& item : value.AsList()) CollectPlaceholders(item, out);
  } else if (value.is_map()) {
    for (const auto& [key, item] : value.AsMap()) CollectPlaceholders(item, out);
  }
}

// `resource_defaults` under `resource`: a key the resource lacks comes from the defaults; params
// and headers are merged key by key.
Value MergeDefaults(const Value& defaults, const Value& resource) {
  Value merged = resource;
  if (!defaults.is_map()) return merged;
  for (const auto& [key, value] : defaults.AsMap()) {
    const Value* own = resource.Find(key);
    if (own == nullptr || own->is_null()) {
      merged.Set(key, value);
    } else if ((key == "params" || key == "headers") && own->is_map() && value.is_map()) {
      Value both = value;
      for (const auto& [name, item] : own->AsMap()) both.Set(name, item);
      merged.Set(key, std::move(both));
    }
  }
  return merged;
}

// Turns `{type: resolve, resource, field}` params into placeholders: in the path where it holds
// `{<param>}`, else as the param's value.
void ResolveParamsToPlaceholders(Value& resource) {
  Value* params = resource.Find("params");
  if (params == nullptr || !params->is_map()) return;
  std::string path = resource.GetString("path");
  Value kept = Value::EmptyMap();
  for (const auto& [name, value] : params->AsMap()) {
    if (!value.is_map() || value.GetString("type") != "resolve") {
      kept.Set(name, value);
      continue;
    }
    std::string placeholder =
        fmt::format("{{resources.{}.{}}}", value.GetString("resource"), value.GetString("field"));
    std::string marker = "{" + name + "}";
    if (size_t at = path.find(marker); at != std::string::npos) {
      path.replace(at, marker.size(), placeholder);
    } else {
      kept.Set(name, Value(placeholder));
    }
  }
  resource.Set("params", std::move(kept));
  resource.Set("path", Value(path));
}

struct Analysis {
  std::vector<ResourceSpec> resources;
  std::vector<ConfigRuleViolation> violations;
};

class ResourceReader {
 public:
  explicit ResourceReader(const Value& source)
      : source_(RestApiDeclaration(), source),
        // A common option of every source (config/pipeline_spec.cc), declared without a default.
        source_cursor_field_(source.GetString("cursor_field")) {}

  Analysis Read() {
    const Value* list = source_.Find("resources");
    if (list == nullptr || !list->is_list()) return std::move(analysis_);
    const Value* defaults = source_.Find("resource_defaults");
    const Value empty = Value::EmptyMap();
    for (size_t i = 0; i < list->AsList().size(); ++i) {
      Value merged = MergeDefaults(defaults != nullptr ? *defaults : empty, list->AsList()[i]);
      ResolveParamsToPlaceholders(merged);
      ReadOne(i, merged);
    }
    LinkParents();
    if (!source_.status().ok()) {
      analysis_.violations.push_back({.path = "", .message = source_.status().message()});
    }
    return std::move(analysis_);
  }

 private:
  void Violation(size_t index, std::string_view key, std::string message) {
    std::string path = key.empty() ? fmt::format("resources[{}]", index)
                                   : fmt::format("resources[{}].{}", index, key);
    analysis_.violations.push_back({.path = std::move(path), .message = std::move(message)});
  }

  void ReadOne(size_t index, const Value& merged) {
    OptionReader reader(ResourceDeclaration(), merged);
    ResourceSpec spec;
    spec.name = reader.String("name");
    for (const ResourceSpec& other : analysis_.resources) {
      if (other.name == spec.name) Violation(index, "name", "two resources are named " + spec.name);
    }
    std::string path = TextIfSet(reader, "path");
    if (path.empty())
      Violation(index, "path", "a resource needs a path (or resource_defaults.path)");
    EndpointSpec& endpoint = spec.endpoint;
    endpoint.name = spec.name;
    endpoint.url = JoinUrl(source_.String("base_url"), path);
    endpoint.method = reader.String("method");
    endpoint.params = ParamsOf(source_.Find("params"));
    QueryParams own = ParamsOf(reader.Find("params"));
    endpoint.params.insert(endpoint.params.end(), own.begin(), own.end());
    endpoint.headers = ParamsOf(reader.Find("headers"));
    if (const Value* body = reader.Find("body")) endpoint.body = *body;
    const Value* selector = reader.Find("record_selector");
    spec.detect_records = selector == nullptr;
    if (!spec.detect_records) endpoint.record_selector = selector->ToDisplayString();
    // A path that ends in a placeholder names one entity: its page is the record.
    if (spec.detect_records && path.ends_with("}") && path.rfind('/') < path.rfind('{')) {
      spec.detect_records = false;
      endpoint.record_selector = "$";
    }
    endpoint.record_id = reader.String("record_id");
    ReadPaging(index, reader, spec);
    // Declared without a default: its default is the resource's name.
    const Value* destination_id = reader.Find("destination_id");
    spec.destination_id = destination_id != nullptr ? destination_id->ToDisplayString() : spec.name;
    spec.parallel = reader.Integer("parallel");
    ReadActions(index, reader, spec);
    if (const Value* auth = reader.Find("auth")) spec.auth = *auth;
    if (const Value* include = reader.Find("include_from_parent"); include && include->is_list()) {
      for (const Value& field : include->AsList()) {
        spec.include_from_parent.push_back(field.ToDisplayString());
      }
    }
    placeholders_.emplace_back();
    CollectPlaceholders(Value(path), placeholders_.back());
    for (const char* key : {"params", "headers", "body"}) {
      if (const Value* value = reader.Find(key)) CollectPlaceholders(*value, placeholders_.back());
    }
    if (!reader.status().ok()) Violation(index, "", reader.status().message());
    analysis_.resources.push_back(std::move(spec));
  }

  void ReadActions(size_t index, OptionReader& reader, ResourceSpec& spec) {
    auto actions = ResponseActionsOf(reader.Find("response_actions"));
    if (!actions) {
      Violation(index, "response_actions", actions.error().message());
      return;
    }
    spec.response_actions = std::move(*actions);
    CheckActions(index, spec.response_actions);
  }

  // `python` goes with `action: python`, and only there.
  void CheckActions(size_t index, const std::vector<ResponseAction>& actions) {
    for (size_t i = 0; i < actions.size(); ++i) {
      bool is_python = actions[i].action == ResponseAction::Kind::kPython;
      if (is_python == !actions[i].python.empty()) continue;
      Violation(index, fmt::format("response_actions[{}].python", i),
                is_python ? "action python needs the hook's code in `python`"
                          : "`python` is the code of an action python; this action is another");
    }
  }

  void ReadPaging(size_t index, OptionReader& reader, ResourceSpec& spec) {
    auto pagination = PaginationOf(reader.Object("pagination"));
    if (!pagination) {
      Violation(index, "pagination", pagination.error().message());
      return;
    }
    const PaginationSpec& paging = *pagination;
    spec.endpoint.pagination = paging;
    if (paging.in_body && spec.endpoint.method != "POST") {
      Violation(index, "pagination.location", "body paging needs method POST");
    }
    bool bounded = !paging.has_more_path.empty() || !paging.total_path.empty() ||
                   paging.maximum_page || paging.maximum_offset;
    if (paging.past_empty_pages && !bounded) {
      Violation(index, "pagination.stop_after_empty_page",
                "false needs total_path, has_more_path or a maximum to end the paging");
    }
    if (reader.Find("incremental") != nullptr) {
      spec.endpoint.incremental =
          ResourceIncrementalOf(reader.Object("incremental"), source_cursor_field_);
      if (spec.endpoint.incremental->cursor_field.empty()) {
        Violation(index, "incremental.cursor_field",
                  "a resource's incremental block needs a cursor_field");
      }
    }
  }

  // Sets each child's parent from its placeholders, and the fields it reads from it.
  void LinkParents() {
    std::vector<ResourceSpec>& resources = analysis_.resources;
    std::map<std::string, size_t> by_name;
    for (size_t i = 0; i < resources.size(); ++i) by_name.emplace(resources[i].name, i);
    for (size_t i = 0; i < resources.size(); ++i) {
      ResourceSpec& spec = resources[i];
      for (const Placeholder& placeholder : placeholders_[i]) {
        auto found = by_name.find(placeholder.resource);
        if (found == by_name.end() || found->second == i || placeholder.field.empty()) {
          Violation(i, "path",
                    fmt::format("{{resources.{}.{}}} must name another declared resource and a "
                                "field of its records",
                                placeholder.resource, placeholder.field));
          continue;
        }
        if (spec.parent && *spec.parent != found->second) {
          Violation(i, "path", "a resource's placeholders must all name the same parent");
          continue;
        }
        spec.parent = found->second;
        AddField(spec.parent_fields, placeholder.field);
      }
      if (!spec.include_from_parent.empty() && !spec.parent) {
        Violation(i, "include_from_parent",
                  "only a child resource (one with placeholders) "
                  "can include fields from its parent");
      }
      for (const std::string& field : spec.include_from_parent) AddField(spec.parent_fields, field);
    }
    for (size_t i = 0; i < resources.size(); ++i) {
      if (resources[i].parent) resources[*resources[i].parent].children.push_back(i);
      size_t steps = 0;
      for (std::optional<size_t> at = resources[i].parent; at; at = resources[*at].parent) {
        if (++steps > resources.size()) {
          Violation(i, "path", "the parents of this resource form a cycle");
          break;
        }
      }
    }
  }

  static void AddField(std::vector<std::string>& fields, const std::string& field) {
    if (std::find(fields.begin(), fields.end(), field) == fields.end()) fields.push_back(field);
  }

  OptionReader source_;
  std::string source_cursor_field_;
  Analysis analysis_;
  std::vector<std::vector<Placeholder>> placeholders_;
};

}  // namespace

Result<std::vector<ResourceSpec>> ReadResources(const Value& source) {
  Analysis analysis = ResourceReader(source).Read();
  if (!analysis.violations.empty()) {
    const ConfigRuleViolation& first = analysis.violations.front();
    return Fail(InvalidArgumentError(fmt::format("source.{}: {}", first.path, first.message)));
  }
  return std::move(analysis.resources);
}

std::vector<ConfigRuleViolation> CheckResources(const Value& source) {
  std::vector<ConfigRuleViolation> violations = ResourceReader(source).Read().violations;
  const Value* resources = source.Find("resources");
  const Value* endpoints = source.Find("endpoints");
  bool has_resources = resources != nullptr && resources->is_list() && !resources->AsList().empty();
  bool has_endpoints = endpoints != nullptr && endpoints->is_map() && !endpoints->AsMap().empty();
  if (has_resources == has_endpoints) {
    violations.push_back({.path = has_resources ? "resources" : "",
                          .message = "a rest_api source declares either endpoints or resources"});
  }
  return violations;
}

Result<std::string> ResolvePlaceholders(std::string_view text, const Value& parent_values,
                                        bool for_url) {
  std::string out;
  size_t done = 0;
  for (size_t at = text.find(kPrefix); at != std::string_view::npos;
       at = text.find(kPrefix, done)) {
    size_t close = text.find('}', at);
    if (close == std::string_view::npos) break;
    std::string_view inner = text.substr(at + kPrefix.size(), close - at - kPrefix.size());
    size_t dot = inner.find('.');
    std::string field(dot == std::string_view::npos ? "" : inner.substr(dot + 1));
    const Value* value = parent_values.Find(field);
    if (value == nullptr || value->is_null()) {
      return Fail(Status(StatusCode::kFailedPrecondition,
                         fmt::format("the parent record has no '{}' for {}", field,
                                     text.substr(at, close - at + 1)),
                         FailureClass::kSource));
    }
    out.append(text.substr(done, at - done));
    std::string resolved = value->ToDisplayString();
    out += for_url ? PercentEncode(resolved) : resolved;
    done = close + 1;
  }
  out.append(text.substr(done));
  return out;
}

Result<Value> ResolveBodyPlaceholders(const Value& value, const Value& parent_values) {
  if (value.is_string()) {
    BIZON_ASSIGN_OR_RETURN(std::string text,
                           ResolvePlaceholders(value.AsString(), parent_values, false));
    return Value(std::move(text));
  }
  Value out = value;
  if (value.is_list()) {
    for (Value& item : out.AsList()) {
      BIZON_ASSIGN_OR_RETURN(item, ResolveBodyPlaceholders(item, parent_values));
    }
  } else if (value.is_map()) {
    for (auto& [key, item] : out.AsMap()) {
      BIZON_ASSIGN_OR_RETURN(item, ResolveBodyPlaceholders(item, parent_values));
    }
  }
  return out;
}

}  // namespace bizon
