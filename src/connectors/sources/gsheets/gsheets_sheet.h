// The parsing half of the gsheets source: the spreadsheet id in its URL, the header row's names
// and their SQL form, cells read as gspread reads them, and one JSON object per row.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

/// The id in ".../spreadsheets/d/<id>/...", as gspread's extract_id_from_url; nullopt without.
std::optional<std::string> ExtractSpreadsheetId(std::string_view url);

/// The original's SQL form of a header: "_" before every ASCII capital that is not the first
/// character, lowercase, then spaces to "_" ("First Name" -> "first__name", "UserID" ->
/// "user_i_d").
std::string SqlColumnName(std::string_view name);

/// A cell as JSON, as gspread's numericise: "" stays "", a Python int literal ("42", " -7",
/// "+3", "007") becomes an integer, a Python float literal ("1.5", "1e3") a float ("1000.0"),
/// anything else (or with an underscore, "1_000", or a non-finite float) the string.
std::string CellJson(std::string_view cell);

/// The values of the "A range" answer of values.get, padded as gspread's fill_gaps: every row
/// as long as the longest, with "".
using SheetRows = std::vector<std::vector<std::string>>;

struct SheetReadOptions {
  /// Header names to keep, in the header's own order; empty keeps every column.
  std::vector<std::string> column_names;
  bool convert_to_sql = true;
};

/// One JSON object text per data row (rows after the header), keyed by the header (or its SQL
/// form). Duplicate header names (or duplicate column_names) and column_names missing from the
/// header are kFailedPrecondition, class source, naming them.
Result<std::vector<std::string>> SheetRecords(SheetRows rows, const SheetReadOptions& options);

/// Reads values.get's `values` (a list of lists of cells) into rows; cells that are not strings
/// are taken by their JSON text. `origin` names the response in errors.
Result<SheetRows> ReadSheetValues(const Value& response, std::string_view origin);

}  // namespace bizon
