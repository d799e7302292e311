#include "connectors/sources/gsheets/gsheets_sheet.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

namespace bizon {
namespace {

Status SheetError(std::string message) {
  return Status(StatusCode::kFailedPrecondition, std::move(message), FailureClass::kSource);
}

std::string_view Strip(std::string_view text) {
  // Python's str.strip() for int()/float(): ASCII whitespace.
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// int(text): optional sign, decimal digits; returns the canonical digits ("-7", "7" for "007").
std::optional<std::string> PythonInt(std::string_view text) {
  text = Strip(text);
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    return std::nullopt;
  }
  size_t first = text.find_first_not_of('0');
  std::string digits = first == std::string_view::npos ? "0" : std::string(text.substr(first));
  return negative && digits != "0" ? "-" + digits : digits;
}

// float(text) for finite decimal literals, printed as Python's repr does.
std::optional<std::string> PythonFloat(std::string_view text) {
  text = Strip(text);
  if (text.empty()) return std::nullopt;
  // strtod also reads hex, inf and nan, which Python's float() reads differently or which JSON
  // cannot hold: only [sign] digits [. digits] [e [sign] digits].
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != 'E' &&
        c != '+' && c != '-') {
      return std::nullopt;
    }
  }
  std::string copy(text);
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(value)) return std::nullopt;
  std::string out = fmt::format("{}", value);
  if (out.find_first_of(".en") == std::string::npos) out += ".0";
  return out;
}

std::string JsonString(std::string_view text) { return Value(text).ToJson(); }

std::string DuplicateList(const std::vector<std::string>& names) {
  std::set<std::string> seen;
  std::vector<std::string> duplicates;
  for (const std::string& name : names) {
    if (!seen.insert(name).second &&
        std::find(duplicates.begin(), duplicates.end(), name) == duplicates.end()) {
      duplicates.push_back(name);
    }
  }
  std::string out;
  for (const std::string& name : duplicates) {
    out += fmt::format("{}{}", out.empty() ? "" : ", ", JsonString(name));
  }
  return out;
}

}  // namespace

std::optional<std::string> ExtractSpreadsheetId(std::string_view url) {
  constexpr std::string_view kMarker = "/spreadsheets/d/";
  size_t at = url.find(kMarker);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = url.substr(at + kMarker.size());
  size_t end = 0;
  while (end < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[end])) ||
                               rest[end] == '-' || rest[end] == '_')) {
    ++end;
  }
  if (end == 0) return std::nullopt;
  return std::string(rest.substr(0, end));
}

std::string SqlColumnName(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c >= 'A' && c <= 'Z') {
      if (i > 0) out.push_back('_');
      out.push_back(static_cast<char>(c - 'A' + 'a'));
    } else {
      out.push_back(c == ' ' ? '_' : c);
    }
  }
  return out;
}

std::string CellJson(std::string_view cell) {
  if (cell.empty() || cell.find('_') != std::string_view::npos) return JsonString(cell);
  if (std::optional<std::string> integer = PythonInt(cell)) return *integer;
  if (std::optional<std::string> real = PythonFloat(cell)) return *real;
  return JsonString(cell);
}

Result<SheetRows> ReadSheetValues(const Value& response, std::string_view origin) {
  SheetRows rows;
  if (!response.is_map()) {
    return Fail(SheetError(fmt::format("the answer of {} is not a ValueRange object", origin)));
  }
  const Value* values = response.Find("values");
  if (values == nullptr || values->is_null()) return rows;  // An empty sheet has no "values".
  if (!values->is_list()) {
    return Fail(
        SheetError(fmt::format("the answer of {} has a 'values' that is not a list", origin)));
  }
  size_t width = 0;
  for (const Value& row : values->AsList()) {
    if (!row.is_list()) {
      return Fail(SheetError(fmt::format("the answer of {} has a row that is not a list: {}",
                                         origin, row.ToJson().substr(0, 100))));
    }
    std::vector<std::string> cells;
    for (const Value& cell : row.AsList()) {
      cells.push_back(cell.is_string() ? cell.AsString()
                      : cell.is_null() ? std::string()
                                       : cell.ToJson());
    }
    width = std::max(width, cells.size());
    rows.push_back(std::move(cells));
  }
  for (std::vector<std::string>& row : rows) row.resize(width);
  return rows;
}

Result<std::vector<std::string>> SheetRecords(SheetRows rows, const SheetReadOptions& options) {
  std::vector<std::string> records;
  if (rows.empty()) return records;
  const std::vector<std::string>& header = rows.front();
  std::vector<size_t> columns;
  if (options.column_names.empty()) {
    if (std::string duplicates = DuplicateList(header); !duplicates.empty()) {
      return Fail(SheetError("Duplicate column names in the header row: " + duplicates +
                             " (name them uniquely, or list the columns to keep in "
                             "column_names)"));
    }
    for (size_t i = 0; i < header.size(); ++i) columns.push_back(i);
  } else {
    if (std::string duplicates = DuplicateList(options.column_names); !duplicates.empty()) {
      return Fail(SheetError("Duplicate column names in column_names: " + duplicates));
    }
    for (const std::string& name : options.column_names) {
      if (std::find(header.begin(), header.end(), name) == header.end()) {
        return Fail(
            SheetError(fmt::format("Column name {} not found in worksheet", JsonString(name))));
      }
    }
    // In the header's order; a name the header repeats reads its last column (gspread's dict).
    for (size_t i = 0; i < header.size(); ++i) {
      bool wanted = std::find(options.column_names.begin(), options.column_names.end(),
                              header[i]) != options.column_names.end();
      if (!wanted) continue;
      auto earlier = std::find_if(columns.begin(), columns.end(),
                                  [&](size_t c) { return header[c] == header[i]; });
      if (earlier != columns.end()) {
        *earlier = i;
      } else {
        columns.push_back(i);
      }
    }
  }
  // Keys after the SQL conversion; two headers converting alike keep the first one's place and
  // the last one's value, as a Python dict comprehension does.
  std::vector<std::string> keys;
  std::vector<size_t> key_of_column;
  for (size_t column : columns) {
    std::string key = options.convert_to_sql ? SqlColumnName(header[column]) : header[column];
    auto found = std::find(keys.begin(), keys.end(), key);
    key_of_column.push_back(static_cast<size_t>(found - keys.begin()));
    if (found == keys.end()) keys.push_back(std::move(key));
  }
  records.reserve(rows.size() - 1);
  std::vector<size_t> value_column(keys.size());
  for (size_t k = 0; k < columns.size(); ++k) value_column[key_of_column[k]] = columns[k];
  for (size_t r = 1; r < rows.size(); ++r) {
    std::string json = "{";
    for (size_t k = 0; k < keys.size(); ++k) {
      if (k > 0) json += ',';
      json += JsonString(keys[k]);
      json += ':';
      json += CellJson(rows[r][value_column[k]]);
    }
    json += '}';
    records.push_back(std::move(json));
  }
  return records;
}

}  // namespace bizon
