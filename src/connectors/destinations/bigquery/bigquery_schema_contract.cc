#include "connectors/destinations/bigquery/bigquery_schema_contract.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace bizon {
namespace {

/// "string 'abc'", "number 1.5": a value for messages, cut at 64 bytes.
std::string Describe(const Value& value) {
  std::string text = value.is_string() ? value.AsString() : value.ToJson();
  if (text.size() > 64) text = text.substr(0, 61) + "...";
  return value.is_string() ? fmt::format("string '{}'", text)
                           : fmt::format("{} {}", ToString(value.kind()), text);
}

/// Whether every element of a REPEATED column's list fits `type` (no null element).
bool FitsRepeated(BqColumnType type, const Value& value) {
  if (!value.is_list()) return false;
  return std::all_of(value.AsList().begin(), value.AsList().end(), [&](const Value& item) {
    return !item.is_null() && FitsColumnType(type, item);
  });
}

}  // namespace

BqColumnType InferColumnType(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kBool:
      return BqColumnType::kBoolean;
    case Value::Kind::kInteger:
      return BqColumnType::kInteger;
    case Value::Kind::kDouble:
      return BqColumnType::kFloat;
    case Value::Kind::kString:
      return BqColumnType::kString;
    default:
      return BqColumnType::kJson;  // Objects and lists.
  }
}

std::optional<BqColumnType> WidenedType(BqColumnType current, const Value& value) {
  // Only numbers widen a column; a string that does not fit is refused, never made STRING.
  if (!value.is_number()) return std::nullopt;
  std::optional<std::string> text = DecimalTextOf(value);
  if (!text) return std::nullopt;
  switch (current) {
    case BqColumnType::kInteger:
      if (IsExactDecimal(*text, 38, 9)) return BqColumnType::kNumeric;
      if (IsExactDecimal(*text, 76, 38)) return BqColumnType::kBignumeric;
      return BqColumnType::kFloat;
    case BqColumnType::kNumeric:
      // NUMERIC rounds extra decimals as it loads them: it only overflows.
      if (FitsColumnType(BqColumnType::kBignumeric, value)) return BqColumnType::kBignumeric;
      return BqColumnType::kFloat;
    default:
      // BIGNUMERIC cannot become FLOAT64 in BigQuery; the other types hold no numbers.
      return std::nullopt;
  }
}

SchemaContractCheck::SchemaContractCheck(SchemaContract contract, std::vector<BqColumn> columns)
    : contract_(contract), columns_(std::move(columns)) {}

std::optional<ContractRefusal> SchemaContractCheck::CheckValue(BqColumn& column,
                                                               const Value& value) {
  bool repeated = column.mode == BqColumnMode::kRepeated;
  if (repeated ? FitsRepeated(column.type, value) : FitsColumnType(column.type, value)) {
    return std::nullopt;
  }
  if (contract_ == SchemaContract::kEvolve && !repeated) {
    if (std::optional<BqColumnType> wider = WidenedType(column.type, value)) {
      changes_.push_back({.column = column.name, .from = column.type, .to = *wider});
      column.type = *wider;
      return std::nullopt;
    }
  }
  std::string expected = repeated ? fmt::format("a list of {}", BqColumnTypeName(column.type))
                                  : std::string(BqColumnTypeName(column.type));
  std::string reason =
      fmt::format("{} does not fit column '{}' ({})", Describe(value), column.name, expected);
  if (contract_ == SchemaContract::kEvolve) reason += ", and evolve widens only numeric columns";
  return ContractRefusal{.column = column.name, .reason = std::move(reason), .value = value};
}

std::optional<ContractRefusal> SchemaContractCheck::CheckNewKey(const std::string& key,
                                                                const Value& value) {
  if (contract_ == SchemaContract::kEvolve) {
    if (IsLoadableColumnName(key)) {
      BqColumnType type = InferColumnType(value);
      columns_.push_back({.name = key, .type = type, .mode = BqColumnMode::kNullable});
      changes_.push_back({.column = key, .from = std::nullopt, .to = type});
      return std::nullopt;
    }
    return ContractRefusal{
        .column = key,
        .reason = fmt::format("key '{}' cannot become a column: use letters, digits and "
                              "underscores, not starting with a digit",
                              key),
        .value = value};
  }
  return ContractRefusal{
      .column = key, .reason = fmt::format("column '{}' is not in the table", key), .value = value};
}

std::vector<ContractRefusal> SchemaContractCheck::Check(Value& row, bool deletes) {
  std::vector<ContractRefusal> refused;
  Value::Map& fields = row.AsMap();
  for (auto field = fields.begin(); field != fields.end();) {
    auto column = std::find_if(columns_.begin(), columns_.end(),
                               [&](const BqColumn& c) { return c.name == field->first; });
    std::optional<ContractRefusal> refusal;
    if (column == columns_.end()) {
      if (field->second.is_null()) {
        field = fields.erase(field);  // A null needs no column.
        continue;
      }
      refusal = CheckNewKey(field->first, field->second);
    } else if (!field->second.is_null()) {
      refusal = CheckValue(*column, field->second);
    }
    if (refusal && contract_ == SchemaContract::kDiscardValue) {
      refused.push_back(std::move(*refusal));
      field = fields.erase(field);
      continue;
    }
    if (refusal) refused.push_back(std::move(*refusal));
    ++field;
  }
  for (const BqColumn& column : columns_) {
    if (deletes || column.mode != BqColumnMode::kRequired) continue;
    const Value* value = row.Find(column.name);
    if (value == nullptr || value->is_null()) {
      refused.push_back({.column = column.name,
                         .reason = fmt::format("the REQUIRED column '{}' is missing", column.name),
                         .whole_row = true});
    }
  }
  return refused;
}

}  // namespace bizon
