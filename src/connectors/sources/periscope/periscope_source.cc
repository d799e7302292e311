// periscope: Periscope Data / Sisense objects read through the private endpoints of its web app,
// authenticated with a browser session. Declared only: the factory is null until the source is
// built.
#include <vector>

#include "bizon/config_spec.h"
#include "connectors/registration.h"

namespace bizon {
namespace {

/// The two session cookies the web app needs, in place of a free cookie map.
FieldSpec PeriscopeCookiesField() {
  return {
      .name = "cookies",
      .type = FieldType::kObject,
      .description = "Cookies of a logged-in browser session.",
      .required = true,
      .nullable = false,
      .fields =
          {
              {.name = "cf_bm",
               .type = FieldType::kString,
               .description = "Value of the __cf_bm cookie.",
               .required = true,
               .nullable = false,
               .secret = true},
              {.name = "periscope_session",
               .type = FieldType::kString,
               .description = "Value of the periscope_session cookie.",
               .required = true,
               .nullable = false,
               .secret = true},
          },
      .unknown_keys = UnknownKeys::kWarn,
  };
}

/// Replaces the `cookies` map inside a `params` block (or any of its alternatives).
void NarrowCookies(std::vector<FieldSpec>& fields) {
  for (FieldSpec& field : fields) {
    if (field.name != "params") continue;
    for (FieldSpec& param : field.fields) {
      if (param.name == "cookies") param = PeriscopeCookiesField();
    }
    for (FieldSpec& shape : field.one_of) {
      for (FieldSpec& param : shape.fields) {
        if (param.name == "cookies") param = PeriscopeCookiesField();
      }
    }
  }
}

FieldSpec PeriscopeAuthenticationField() {
  FieldSpec authentication = AuthenticationField({"cookies"}, /*required=*/true);
  NarrowCookies(authentication.fields);
  for (VariantSpec& variant : authentication.variants) NarrowCookies(variant.fields);
  return authentication;
}

}  // namespace

Status RegisterPeriscopeSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "periscope",
      .description = "Periscope Data (Sisense) dashboards, charts, views, users and databases, "
                     "through the web app's own endpoints.",
      .streams =
          {
              {"charts", false, "Widgets of every dashboard that query database_id."},
              {"dashboards_metadata", false, "Dashboards as the global search lists them."},
              {"dashboards", false, "Dashboards of the site."},
              {"databases", false, "Databases connected to the site."},
              {"users", false, "Users who own objects on the site."},
              {"views", false, "SQL views of the site."},
          },
      .config =
          {
              .fields =
                  {
                      {.name = "workspace_name",
                       .type = FieldType::kString,
                       .description = "Name of the Periscope workspace (not used by any request).",
                       .required = true,
                       .nullable = false},
                      {.name = "client_site_id",
                       .type = FieldType::kInteger,
                       .description = "Numeric id of the site, sent with every request.",
                       .required = true,
                       .nullable = false},
                      {.name = "database_id",
                       .type = FieldType::kInteger,
                       .description = "Only charts that query this database are kept.",
                       .required = true,
                       .nullable = false},
                      {.name = "x_csrf_token",
                       .type = FieldType::kString,
                       .description = "CSRF token of the browser session, sent as the "
                                      "x-csrf-token header.",
                       .required = true,
                       .nullable = false,
                       .secret = true},
                      PeriscopeAuthenticationField(),
                  },
              .unknown_keys = UnknownKeys::kWarn,
          },
      .factory = nullptr,
  });
}

}  // namespace bizon
