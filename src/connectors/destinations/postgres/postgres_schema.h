// Schema contracts of the postgres destination: whether a JSON value fits a column, the column
// type a new field gets, and how a column widens. Pure functions, no connection.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bizon {

enum class PgColumnType;

/// The JSON type of a value, with numbers split by whether they fit a bigint exactly.
enum class JsonKind { kNull, kString, kInteger, kNumber, kBoolean, kObject, kArray };

/// How a value of `kind` goes into a column of `type`.
enum class PgFit {
  kFits,      // Written as is.
  kWidens,    // Fits once the column takes the type WidenedFor() gives.
  kMismatch,  // Would need the column to become another kind of thing (a string, say).
};

PgFit FitValue(PgColumnType type, JsonKind kind);
/// The type a column of `type` widens to so that `kind` fits (only for PgFit::kWidens).
PgColumnType WidenedFor(PgColumnType type, JsonKind kind);
/// The type of a new column first seen with a value of `kind`; nullopt for null (no column until
/// a value shows what it holds).
std::optional<PgColumnType> InferredType(JsonKind kind);
/// True when a column of `from` can become `to` without losing a value (ALTER ... TYPE).
bool IsWidening(PgColumnType from, PgColumnType to);

std::string_view JsonKindName(JsonKind kind);

/// A value of a record that does not fit its table as it is.
struct FitProblem {
  std::string column;
  JsonKind kind = JsonKind::kNull;
  /// The column's type; nullopt when the key names no column.
  std::optional<PgColumnType> column_type;
  PgFit fit = PgFit::kMismatch;
};

/// "column 'x' is bigint and the value is a string", for errors and `__rejected`.
std::string DescribeProblem(const FitProblem& problem);

/// A string as an SQL literal (standard_conforming_strings, PostgreSQL's default since 9.1).
std::string SqlTextLiteral(std::string_view text);

}  // namespace bizon
