#include "connectors/destinations/postgres/postgres_schema.h"

#include <fmt/format.h>

#include "connectors/destinations/postgres/postgres_destination.h"

namespace bizon {

PgFit FitValue(PgColumnType type, JsonKind kind) {
  if (kind == JsonKind::kNull) return PgFit::kFits;
  switch (type) {
    case PgColumnType::kJsonb:
      return PgFit::kFits;
    case PgColumnType::kText:
      // A number or a flag keeps its JSON spelling; a structure would be a change of kind.
      return kind == JsonKind::kObject || kind == JsonKind::kArray ? PgFit::kMismatch
                                                                   : PgFit::kFits;
    case PgColumnType::kBigint:
      if (kind == JsonKind::kInteger) return PgFit::kFits;
      return kind == JsonKind::kNumber ? PgFit::kWidens : PgFit::kMismatch;
    case PgColumnType::kNumeric:
    case PgColumnType::kDouble:
      return kind == JsonKind::kInteger || kind == JsonKind::kNumber ? PgFit::kFits
                                                                     : PgFit::kMismatch;
    case PgColumnType::kBoolean:
      return kind == JsonKind::kBoolean ? PgFit::kFits : PgFit::kMismatch;
    case PgColumnType::kTimestamptz:
    case PgColumnType::kDate:
      return kind == JsonKind::kString ? PgFit::kFits : PgFit::kMismatch;
  }
  return PgFit::kMismatch;
}

PgColumnType WidenedFor(PgColumnType type, JsonKind kind) {
  // bigint takes a fraction (or an integer past 64 bits) as numeric, which keeps every digit.
  if (type == PgColumnType::kBigint && kind == JsonKind::kNumber) return PgColumnType::kNumeric;
  return type;
}

std::optional<PgColumnType> InferredType(JsonKind kind) {
  switch (kind) {
    case JsonKind::kNull:
      return std::nullopt;
    case JsonKind::kString:
      return PgColumnType::kText;
    case JsonKind::kInteger:
      return PgColumnType::kBigint;
    case JsonKind::kNumber:
      return PgColumnType::kDouble;
    case JsonKind::kBoolean:
      return PgColumnType::kBoolean;
    case JsonKind::kObject:
    case JsonKind::kArray:
      return PgColumnType::kJsonb;
  }
  return std::nullopt;
}

bool IsWidening(PgColumnType from, PgColumnType to) {
  if (from == to) return false;
  if (from == PgColumnType::kBigint) {
    return to == PgColumnType::kNumeric || to == PgColumnType::kDouble;
  }
  return from == PgColumnType::kNumeric && to == PgColumnType::kDouble;
}

std::string_view JsonKindName(JsonKind kind) {
  switch (kind) {
    case JsonKind::kNull:
      return "null";
    case JsonKind::kString:
      return "a string";
    case JsonKind::kInteger:
      return "an integer";
    case JsonKind::kNumber:
      return "a number with a fraction or beyond 64 bits";
    case JsonKind::kBoolean:
      return "a boolean";
    case JsonKind::kObject:
      return "an object";
    case JsonKind::kArray:
      return "an array";
  }
  return "a value";
}

std::string DescribeProblem(const FitProblem& problem) {
  if (!problem.column_type) {
    return fmt::format("key '{}' is not a column of the table (its value is {})", problem.column,
                       JsonKindName(problem.kind));
  }
  return fmt::format("column '{}' is {} and the value is {}", problem.column,
                     PgTypeName(*problem.column_type), JsonKindName(problem.kind));
}

std::string SqlTextLiteral(std::string_view text) {
  std::string literal = "'";
  for (char c : text) {
    if (c == '\'') literal.push_back('\'');
    literal.push_back(c);
  }
  literal.push_back('\'');
  return literal;
}

}  // namespace bizon
