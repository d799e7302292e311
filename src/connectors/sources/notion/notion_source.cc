// notion: pages, databases, data sources, blocks and users of a Notion workspace, with
// incremental reads through the search API. Declared only: the factory is null until the source is
// built.
#include "bizon/config_spec.h"
#include "bizon/value.h"
#include "connectors/registration.h"

namespace bizon {

Status RegisterNotionSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "notion",
      .description = "Notion API (version 2025-09-03): pages, databases, data sources, blocks "
                     "(raw or as markdown) and users.",
      .streams =
          {
              {"databases", true, "The configured databases, one object each."},
              {"data_sources", false, "Data sources of the configured databases."},
              {"pages", true, "Pages of the configured databases, then the configured pages."},
              {"blocks", true, "Every block of the configured pages and database pages."},
              {"blocks_markdown", true, "The same blocks, each rendered as a markdown line."},
              {"users", false, "Members and bots of the workspace."},
              {"all_pages", true, "Every page the integration can see."},
              {"all_databases", true, "Every database the integration can see."},
              {"all_data_sources", false, "Every data source the integration can see."},
              {"all_blocks_markdown", true,
               "Blocks of every visible page and database, rendered as markdown."},
          },
      .config =
          {
              .fields =
                  {
                      {.name = "database_ids",
                       .type = FieldType::kList,
                       .description = "Databases to read, for the database, data source, page "
                                      "and block streams.",
                       .default_value = Value::EmptyList(),
                       .items = {FieldSpec{.name = "database_id", .type = FieldType::kString}}},
                      {.name = "page_ids",
                       .type = FieldType::kList,
                       .description = "Single pages to read, for the page and block streams.",
                       .default_value = Value::EmptyList(),
                       .items = {FieldSpec{.name = "page_id", .type = FieldType::kString}}},
                      {.name = "fetch_blocks_recursively",
                       .type = FieldType::kBoolean,
                       .description = "Descend into child blocks and inline databases.",
                       .nullable = false,
                       .default_value = true},
                      {.name = "max_recursion_depth",
                       .type = FieldType::kInteger,
                       .description = "Deepest block level read below a page.",
                       .nullable = false,
                       .default_value = 5,
                       .minimum = 1,
                       .maximum = 100},
                      {.name = "page_size",
                       .type = FieldType::kInteger,
                       .description = "Results asked for in each list, query or search call.",
                       .nullable = false,
                       .default_value = 100,
                       .minimum = 1,
                       .maximum = 100},
                      {.name = "max_workers",
                       .type = FieldType::kInteger,
                       .description = "Parallel requests, and items handled per iteration by "
                                      "the block streams.",
                       .nullable = false,
                       .default_value = 3,
                       .minimum = 1,
                       .maximum = 10},
                      {.name = "database_filters",
                       .type = FieldType::kMap,
                       .description = "Notion filter object per database id, sent as is with "
                                      "each query of that database.",
                       .default_value = Value::EmptyMap()},
                      // Every endpoint needs the integration token.
                      AuthenticationField({"api_key", "bearer"}, /*required=*/true),
                  },
              .unknown_keys = UnknownKeys::kWarn,
          },
      .factory = nullptr,
  });
}

}  // namespace bizon
