#include "connectors/destinations/bigquery_common/bigquery_merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <utility>

#include "connectors/destinations/destination_record.h"

namespace bizon {
namespace {

Status ChangeError(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message), FailureClass::kDestination);
}

/// A column name as SQL quotes it (names are letters, digits and '_': IsLoadableColumnName).
std::string Column(std::string_view name) { return fmt::format("`{}`", name); }

std::string Table(const BigQueryTableRef& ref) { return fmt::format("`{}`", ref.ToString()); }

/// The Debezium event of `record`: the kafka source's record carries it as `value`; a JSON
/// converter with schemas on wraps it as {"schema", "payload"}. nullptr: a tombstone.
const Value* DebeziumEvent(const Value& record) {
  const Value* event = &record;
  if (const Value* value = record.Find("value");
      value != nullptr && record.Find("op") == nullptr &&
      (record.Find("topic") != nullptr || record.Find("offset") != nullptr)) {
    event = value;
  }
  if (event->is_map() && event->Find("op") == nullptr) {
    if (const Value* payload = event->Find("payload"); payload != nullptr) event = payload;
  }
  return event->is_null() ? nullptr : event;
}

/// `field` = `value` for every column of `keys`, joined by AND.
std::string KeyCondition(const std::vector<std::string>& keys, std::string_view left,
                         const std::function<std::string(size_t)>& right) {
  std::vector<std::string> parts;
  parts.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    parts.push_back(fmt::format("{}.{} = {}", left, Column(keys[i]), right(i)));
  }
  return fmt::format("{}", fmt::join(parts, " AND "));
}

/// The winner of each key among the staging rows.
std::string Winners(const BigQueryTableRef& staging, const TablePolicy& policy) {
  std::vector<std::string> keys;
  keys.reserve(policy.primary_key.size());
  for (const std::string& key : policy.primary_key) keys.push_back(Column(key));
  std::string order;
  if (policy.dedup_sort) {
    order = fmt::format("{} {} NULLS LAST, ", Column(policy.dedup_sort->column),
                        policy.dedup_sort->descending ? "DESC" : "ASC");
  }
  // QUALIFY needs a WHERE (or GROUP BY, HAVING) in BigQuery.
  return fmt::format(
      "SELECT * FROM {} WHERE TRUE QUALIFY ROW_NUMBER() OVER (PARTITION BY {} ORDER BY {}{} "
      "DESC) = 1",
      Table(staging), fmt::join(keys, ", "), order, Column(kMergeOrdinalColumn));
}

std::string ColumnList(const std::vector<BqColumn>& columns, std::string_view prefix) {
  std::vector<std::string> names;
  names.reserve(columns.size());
  for (const BqColumn& column : columns) names.push_back(std::string(prefix) + Column(column.name));
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string UpsertStatement(const BigQueryTableRef& target, const BigQueryTableRef& staging,
                            const std::vector<BqColumn>& columns, const TablePolicy& policy) {
  const std::vector<std::string>& keys = policy.primary_key;
  std::string sql = fmt::format(
      "MERGE {} AS target USING ({}) AS source ON {} WHEN MATCHED AND source.{} THEN DELETE",
      Table(target), Winners(staging, policy),
      KeyCondition(keys, "target", [&](size_t i) { return "source." + Column(keys[i]); }),
      Column(kMergeDeletedColumn));
  std::vector<std::string> updates;
  for (const BqColumn& column : columns) {
    if (std::find(keys.begin(), keys.end(), column.name) != keys.end()) continue;
    updates.push_back(fmt::format("{0} = source.{0}", Column(column.name)));
  }
  if (!updates.empty()) {
    sql += fmt::format(" WHEN MATCHED THEN UPDATE SET {}", fmt::join(updates, ", "));
  }
  sql += fmt::format(" WHEN NOT MATCHED AND NOT source.{} THEN INSERT ({}) VALUES ({})",
                     Column(kMergeDeletedColumn), ColumnList(columns, ""),
                     ColumnList(columns, "source."));
  return sql;
}

/// Delete-insert as one statement: each winner comes twice, once under its key (which matches
/// and deletes every row of the key) and once, when it is not a delete, under a NULL key that
/// matches nothing (and is inserted).
std::string DeleteInsertStatement(const BigQueryTableRef& target, const BigQueryTableRef& staging,
                                  const std::vector<BqColumn>& columns, const TablePolicy& policy) {
  const std::vector<std::string>& keys = policy.primary_key;
  std::vector<std::string> match_keys;
  std::vector<std::string> null_keys;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto column = std::find_if(columns.begin(), columns.end(),
                               [&](const BqColumn& c) { return c.name == keys[i]; });
    match_keys.push_back(fmt::format("{} AS `_bizon_key_{}`", Column(keys[i]), i));
    null_keys.push_back(fmt::format("CAST(NULL AS {})", BqColumnSqlType(column->type)));
  }
  std::string values = ColumnList(columns, "");
  std::string source = fmt::format(
      "WITH winners AS ({0}) SELECT {1}, FALSE AS `_bizon_insert`, {2} FROM winners UNION ALL "
      "SELECT {3}, TRUE, {2} FROM winners WHERE NOT {4}",
      Winners(staging, policy), fmt::join(match_keys, ", "), values, fmt::join(null_keys, ", "),
      Column(kMergeDeletedColumn));
  return fmt::format(
      "MERGE {} AS target USING ({}) AS source ON {} WHEN MATCHED THEN DELETE WHEN NOT MATCHED "
      "AND source.`_bizon_insert` THEN INSERT ({}) VALUES ({})",
      Table(target), source,
      KeyCondition(keys, "target",
                   [](size_t i) { return fmt::format("source.`_bizon_key_{}`", i); }),
      values, ColumnList(columns, "source."));
}

}  // namespace

Result<std::optional<ChangeRow>> ReadChangeRow(std::string_view payload, std::string_view record_id,
                                               const TablePolicy& policy) {
  Result<Value> parsed = Value::FromJson(payload);
  if (!parsed || !parsed->is_map()) {
    return Fail(
        ChangeError(fmt::format("record {} is not a JSON object", QuoteDestinationId(record_id))));
  }
  ChangeRow change;
  const Value* partition = parsed->Find("partition");
  const Value* offset = parsed->Find("offset");
  if (parsed->Find("topic") != nullptr && partition != nullptr && partition->is_integer() &&
      offset != nullptr && offset->is_integer()) {
    change.kafka_position = {partition->AsInteger(), offset->AsInteger()};
  }
  if (policy.change_format == ChangeFormat::kDebezium) {
    const Value* event = DebeziumEvent(*parsed);
    if (event == nullptr) return std::optional<ChangeRow>();  // A tombstone.
    std::string op = event->is_map() ? event->GetString("op") : std::string();
    if (op != "c" && op != "r" && op != "u" && op != "d") {
      return Fail(ChangeError(fmt::format(
          "record {}: a Debezium event has op c, r, u or d, this one {}; change_format: "
          "debezium applies creates, reads, updates and deletes",
          QuoteDestinationId(record_id),
          op.empty() ? std::string("none") : fmt::format("'{}'", op))));
    }
    change.deleted = op == "d";
    const Value* image = event->Find(change.deleted ? "before" : "after");
    if (image == nullptr || !image->is_map()) {
      return Fail(ChangeError(fmt::format(
          "record {}: the Debezium {} event has no {} image (an object), so its key is unknown",
          QuoteDestinationId(record_id), op, change.deleted ? "before" : "after")));
    }
    change.row = *image;
  } else {
    change.row = std::move(*parsed);
  }
  if (!policy.hard_delete.empty()) {
    const Value* field = &change.row;
    for (const std::string& part : policy.hard_delete) {
      field = field->is_map() ? field->Find(part) : nullptr;
      if (field == nullptr) break;
    }
    if (field != nullptr && IsDeleteMark(field->ToJson())) change.deleted = true;
  }
  return std::optional<ChangeRow>(std::move(change));
}

std::vector<BqColumn> MergeStagingColumns(const std::vector<BqColumn>& columns) {
  std::vector<BqColumn> out = columns;
  // A delete's image may name its key only (a Debezium before image under PostgreSQL's
  // REPLICA IDENTITY DEFAULT): the staging table takes it, the MERGE inserts no delete.
  for (BqColumn& column : out) {
    if (column.mode == BqColumnMode::kRequired) column.mode = BqColumnMode::kNullable;
  }
  out.push_back({.name = std::string(kMergeOrdinalColumn),
                 .type = BqColumnType::kInteger,
                 .mode = BqColumnMode::kRequired});
  out.push_back({.name = std::string(kMergeDeletedColumn),
                 .type = BqColumnType::kBoolean,
                 .mode = BqColumnMode::kRequired});
  return out;
}

std::string CheckMergeColumns(const TablePolicy& policy, const std::vector<BqColumn>& columns) {
  auto has = [&](std::string_view name) {
    return std::any_of(columns.begin(), columns.end(),
                       [&](const BqColumn& column) { return column.name == name; });
  };
  for (const std::string& key : policy.primary_key) {
    if (!has(key)) {
      return fmt::format("primary_key: '{}' is not a column of the table's record_schema", key);
    }
  }
  if (policy.dedup_sort && !has(policy.dedup_sort->column)) {
    return fmt::format("dedup_sort.column: '{}' is not a column of the table's record_schema",
                       policy.dedup_sort->column);
  }
  return std::string();
}

Result<std::string> MergeStatement(const BigQueryTableRef& target, const BigQueryTableRef& staging,
                                   const std::vector<BqColumn>& columns,
                                   const TablePolicy& policy) {
  if (policy.primary_key.empty()) {
    return Fail(InvalidArgumentError("write_disposition: merge needs a primary_key"));
  }
  if (std::string problem = CheckMergeColumns(policy, columns); !problem.empty()) {
    return Fail(InvalidArgumentError(fmt::format("table {}: {}", target.ToString(), problem)));
  }
  return policy.strategy == MergeStrategy::kUpsert
             ? UpsertStatement(target, staging, columns, policy)
             : DeleteInsertStatement(target, staging, columns, policy);
}

}  // namespace bizon
