#include "common/write_disposition.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>

namespace bizon {
namespace {

constexpr std::string_view kDispositionKey = "write_disposition";

Option DispositionOption() {
  return Option::Enum(std::string(kDispositionKey), {"append", "replace", "merge"},
                      "append adds the load's rows; replace swaps the table for the run's rows; "
                      "merge upserts and deletes by primary_key.");
}

Option PrimaryKeyOption() {
  return Option::List("primary_key", Option::String(""), "Key columns of a merge (one or more).");
}

Option StrategyOption() {
  return Option::Enum("merge_strategy", {"delete-insert", "upsert"},
                      "delete-insert deletes each loaded key then inserts its winner; upsert "
                      "inserts or updates on a unique index of the key.");
}

Option DedupSortOption() {
  return Option::Object(
      "dedup_sort",
      {Option::String("column", "The column that orders the rows of one key.").Required(),
       Option::Enum("order", {"asc", "desc"}, "desc keeps the largest value.").Default("desc")},
      "Which row of a key wins inside one load; default: the last one received.");
}

Option HardDeleteOption() {
  return Option::String("hard_delete",
                        "A column (or a path such as $.meta.deleted) whose value true deletes "
                        "the key from the table.");
}

Option ChangeFormatOption() {
  return Option::Enum("change_format", {"none", "debezium"},
                      "debezium: each record is a Debezium change event (from the kafka source, "
                      "or the bare envelope); its after image is the row, op d deletes.");
}

Option ContractOption() {
  return Option::Enum("schema_contract", {"evolve", "freeze", "discard_row", "discard_value"},
                      "What a record that does not fit the columns does: evolve adds columns and "
                      "widens types; freeze fails the run; discard_row and discard_value put the "
                      "record or its value into <table>__rejected.");
}

Status PolicyError(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message), FailureClass::kConfig);
}

template <typename Enum>
Enum Pick(std::string_view value, std::initializer_list<std::pair<std::string_view, Enum>> names,
          Enum fallback) {
  for (const auto& [name, member] : names) {
    if (value == name) return member;
  }
  return fallback;
}

/// Reads the options `block` sets over `policy` (what it does not set is inherited).
void ApplyPolicyBlock(const Value& block, TablePolicy& policy) {
  if (const Value* value = block.Find(kDispositionKey); value != nullptr && value->is_string()) {
    policy.disposition = Pick(value->AsString(),
                              {{"append", WriteDisposition::kAppend},
                               {"replace", WriteDisposition::kReplace},
                               {"merge", WriteDisposition::kMerge}},
                              policy.disposition);
  }
  if (const Value* keys = block.Find("primary_key"); keys != nullptr) {
    if (keys->is_string()) {
      policy.primary_key = {keys->AsString()};
    } else if (keys->is_list()) {
      policy.primary_key.clear();
      for (const Value& key : keys->AsList()) {
        if (key.is_string()) policy.primary_key.push_back(key.AsString());
      }
    }
  }
  if (const Value* value = block.Find("merge_strategy"); value != nullptr && value->is_string()) {
    policy.strategy =
        Pick(value->AsString(),
             {{"delete-insert", MergeStrategy::kDeleteInsert}, {"upsert", MergeStrategy::kUpsert}},
             policy.strategy);
  }
  if (const Value* sort = block.Find("dedup_sort"); sort != nullptr && sort->is_map()) {
    policy.dedup_sort = DedupSort{.column = sort->GetString("column"),
                                  .descending = sort->GetString("order", "desc") != "asc"};
  }
  if (const Value* path = block.Find("hard_delete"); path != nullptr && path->is_string()) {
    policy.hard_delete = SplitFieldPath(path->AsString());
  }
  if (const Value* value = block.Find("change_format"); value != nullptr && value->is_string()) {
    policy.change_format = Pick(
        value->AsString(), {{"none", ChangeFormat::kNone}, {"debezium", ChangeFormat::kDebezium}},
        policy.change_format);
  }
  if (const Value* value = block.Find("schema_contract"); value != nullptr && value->is_string()) {
    policy.contract = Pick(value->AsString(),
                           {{"evolve", SchemaContract::kEvolve},
                            {"freeze", SchemaContract::kFreeze},
                            {"discard_row", SchemaContract::kDiscardRow},
                            {"discard_value", SchemaContract::kDiscardValue}},
                           policy.contract);
  }
}

/// The rules one table's policy must keep; `where` is its path for messages.
/// `sets_merge_options`: the block itself sets hard_delete or dedup_sort (an inherited one is
/// no mistake in a table that appends).
void CheckPolicy(const TablePolicy& policy, std::string_view where, SyncMode sync_mode,
                 bool sets_merge_options, std::vector<ConfigRuleViolation>& violations) {
  auto at = [&](std::string_view key) {
    return where.empty() ? std::string(key) : fmt::format("{}.{}", where, key);
  };
  if (policy.merges() && policy.primary_key.empty()) {
    violations.push_back({.path = at(kDispositionKey),
                          .message = "write_disposition: merge needs a primary_key: the columns "
                                     "that name one row"});
  }
  for (const std::string& key : policy.primary_key) {
    if (key.empty()) {
      violations.push_back({.path = at("primary_key"),
                            .message = "primary_key: a key column name must not be empty"});
    }
  }
  if (policy.disposition == WriteDisposition::kReplace && sync_mode == SyncMode::kStream) {
    violations.push_back(
        {.path = at(kDispositionKey),
         .message = "write_disposition: replace swaps the table at the end of a run, and a stream "
                    "run never ends; use append or merge"});
  }
  if (!policy.merges() && sets_merge_options) {
    violations.push_back({.path = at(policy.hard_delete.empty() ? "dedup_sort" : "hard_delete"),
                          .message = "hard_delete and dedup_sort apply only with "
                                     "write_disposition: merge"});
  }
  if (policy.dedup_sort && policy.dedup_sort->column.empty()) {
    violations.push_back({.path = at("dedup_sort.column"),
                          .message = "dedup_sort.column: name the column that orders the rows"});
  }
  if (!policy.hard_delete.empty() &&
      std::any_of(policy.hard_delete.begin(), policy.hard_delete.end(),
                  [](const std::string& part) { return part.empty(); })) {
    violations.push_back({.path = at("hard_delete"),
                          .message = "hard_delete: a path such as deleted or $.meta.deleted, "
                                     "with no empty part"});
  }
}

}  // namespace

std::vector<FieldSpec> WriteDispositionFields() {
  return {DispositionOption().Default("append"),
          PrimaryKeyOption(),
          StrategyOption().Default("delete-insert"),
          DedupSortOption(),
          HardDeleteOption(),
          ChangeFormatOption().Default("none"),
          ContractOption()};
}

std::vector<FieldSpec> TablePolicyFields() {
  return {DispositionOption(), PrimaryKeyOption(),   StrategyOption(), DedupSortOption(),
          HardDeleteOption(),  ChangeFormatOption(), ContractOption()};
}

const TablePolicy& TablePolicies::For(std::string_view table) const {
  auto found = tables_.find(table);
  return found == tables_.end() ? default_ : found->second;
}

bool TablePolicies::AnyMerge() const {
  return default_.merges() || std::any_of(tables_.begin(), tables_.end(),
                                          [](const auto& entry) { return entry.second.merges(); });
}

bool TablePolicies::AnyContract() const {
  auto has = [](const TablePolicy& policy) { return policy.contract != SchemaContract::kExact; };
  return has(default_) || std::any_of(tables_.begin(), tables_.end(),
                                      [&](const auto& entry) { return has(entry.second); });
}

Result<TablePolicies> ReadTablePolicies(const Value& config) {
  TablePolicies policies;
  ApplyPolicyBlock(config, policies.default_);
  if (const Value* schemas = config.Find("record_schemas");
      schemas != nullptr && schemas->is_list()) {
    for (const Value& entry : schemas->AsList()) {
      if (!entry.is_map()) continue;
      TablePolicy policy = policies.default_;
      ApplyPolicyBlock(entry, policy);
      policies.tables_[entry.GetString("destination_id")] = std::move(policy);
    }
  }
  // The sync mode only matters to the stream rule, which config validate reports.
  std::vector<ConfigRuleViolation> violations = CheckTablePolicies(config, SyncMode::kIncremental);
  if (!violations.empty()) {
    return Fail(PolicyError(fmt::format("destination.config.{}: {}", violations.front().path,
                                        violations.front().message)));
  }
  return policies;
}

std::vector<ConfigRuleViolation> CheckTablePolicies(const Value& config, SyncMode sync_mode) {
  auto sets_merge_options = [](const Value& block) {
    auto set = [&](std::string_view key) {
      const Value* value = block.Find(key);
      return value != nullptr && !value->is_null();
    };
    return set("hard_delete") || set("dedup_sort");
  };
  std::vector<ConfigRuleViolation> violations;
  TablePolicy defaults;
  ApplyPolicyBlock(config, defaults);
  const Value* schemas = config.Find("record_schemas");
  bool every_table_listed = false;
  bool an_entry_merges = false;
  if (schemas != nullptr && schemas->is_list()) {
    for (size_t i = 0; i < schemas->AsList().size(); ++i) {
      const Value& entry = schemas->AsList()[i];
      if (!entry.is_map()) continue;
      TablePolicy policy = defaults;
      ApplyPolicyBlock(entry, policy);
      CheckPolicy(policy, fmt::format("record_schemas[{}]", i), sync_mode,
                  sets_merge_options(entry), violations);
      every_table_listed = true;
      an_entry_merges = an_entry_merges || policy.merges();
    }
  }
  // The destination-wide policy is a table's own when no entry overrides it; with entries, a
  // merge without a key is reported at the entry that lacks it, and merge options given for the
  // entries that merge are no mistake.
  std::vector<ConfigRuleViolation> own;
  CheckPolicy(defaults, "", sync_mode, sets_merge_options(config) && !an_entry_merges, own);
  for (ConfigRuleViolation& violation : own) {
    bool about_key = violation.message.starts_with("write_disposition: merge needs");
    if (!(about_key && every_table_listed)) violations.push_back(std::move(violation));
  }
  return violations;
}

std::vector<std::string> SplitFieldPath(std::string_view path) {
  if (path.starts_with("$.")) path.remove_prefix(2);
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    parts.emplace_back(path.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

bool IsDeleteMark(std::string_view raw_json) {
  while (!raw_json.empty() && std::isspace(static_cast<unsigned char>(raw_json.back())) != 0) {
    raw_json.remove_suffix(1);
  }
  if (raw_json == "true") return true;
  if (raw_json.size() != 6 || raw_json.front() != '"' || raw_json.back() != '"') return false;
  std::string_view text = raw_json.substr(1, 4);
  return std::equal(text.begin(), text.end(), "true", [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == b;
  });
}

std::string_view WriteDispositionName(WriteDisposition disposition) {
  switch (disposition) {
    case WriteDisposition::kAppend:
      return "append";
    case WriteDisposition::kReplace:
      return "replace";
    case WriteDisposition::kMerge:
      return "merge";
  }
  return "append";
}

std::string_view SchemaContractName(SchemaContract contract) {
  switch (contract) {
    case SchemaContract::kExact:
      return "exact";
    case SchemaContract::kEvolve:
      return "evolve";
    case SchemaContract::kFreeze:
      return "freeze";
    case SchemaContract::kDiscardRow:
      return "discard_row";
    case SchemaContract::kDiscardValue:
      return "discard_value";
  }
  return "exact";
}

}  // namespace bizon
