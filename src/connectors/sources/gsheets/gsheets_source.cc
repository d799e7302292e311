// gsheets: one Google Sheets worksheet, read in a single iteration. Declared only: the factory is
// null until the source is built.
#include "bizon/config_spec.h"
#include "bizon/value.h"
#include "connectors/registration.h"

namespace bizon {

Status RegisterGsheetsSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "gsheets",
      .description = "One Google Sheets worksheet, one record per row keyed by the header row.",
      .streams = {{"worksheet", false, "Rows of the configured worksheet."}},
      .config =
          {
              .fields =
                  {
                      {.name = "spreadsheet_url",
                       .type = FieldType::kString,
                       .description = "URL of the spreadsheet.",
                       .required = true,
                       .nullable = false,
                       .example = "https://docs.google.com/spreadsheets/d/<id>/edit"},
                      {.name = "worksheet_name",
                       .type = FieldType::kString,
                       .description = "Title of the worksheet (tab) to read.",
                       .required = true,
                       .nullable = false,
                       .example = "Sheet1"},
                      {.name = "service_account_key",
                       .type = FieldType::kString,
                       .description = "Service-account key file content (JSON text); empty "
                                      "means Application Default Credentials.",
                       .nullable = false,
                       .default_value = "",
                       .secret = true},
                      {.name = "column_names",
                       .type = FieldType::kList,
                       .description = "Header names of the columns to keep; empty keeps them all.",
                       .nullable = false,
                       .default_value = Value::EmptyList(),
                       .items = {FieldSpec{.name = "column_name", .type = FieldType::kString}}},
                      {.name = "convert_column_names_to_sql_format",
                       .type = FieldType::kBoolean,
                       .description = "Rewrite header names as snake_case keys (firstName "
                                      "becomes first_name).",
                       .nullable = false,
                       .default_value = true},
                  },
              .unknown_keys = UnknownKeys::kWarn,
          },
      .factory = nullptr,
  });
}

}  // namespace bizon
