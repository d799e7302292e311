#include "connectors/sources/hubspot/hubspot_api.h"

#include <fmt/format.h>

#include <algorithm>

#include "bizon/clock.h"

namespace bizon {
namespace {

Status HubSpotError(std::string message) {
  return Status(StatusCode::kFailedPrecondition, std::move(message), FailureClass::kSource);
}

std::optional<int64_t> MillisOf(const std::optional<Value>& value) {
  if (!value || !value->is_string()) return std::nullopt;
  auto micros = ParseTimestamp(value->AsString());
  if (!micros) return std::nullopt;
  return *micros / 1000;
}

Value StringList(const std::vector<std::string>& items) {
  Value::List list;
  list.reserve(items.size());
  for (const std::string& item : items) list.emplace_back(item);
  return Value(std::move(list));
}

std::vector<std::string> StringsOf(const Value* value) {
  std::vector<std::string> out;
  if (value == nullptr || !value->is_list()) return out;
  for (const Value& item : value->AsList()) out.push_back(item.ToDisplayString());
  return out;
}

Value Filter(std::string_view property, std::string_view op, int64_t millis) {
  return Value(Value::Map{{"propertyName", Value(property)},
                          {"operator", Value(op)},
                          {"value", Value(std::to_string(millis))}});
}

std::string ErrorField(const Result<Value>& body, std::string_view key) {
  if (!body || !body->is_map()) return "";
  const Value* field = body->Find(key);
  return field != nullptr && field->is_string() ? field->AsString() : "";
}

}  // namespace

std::string_view HubspotModifiedProperty(std::string_view object) {
  return object == "contacts" ? "lastmodifieddate" : "hs_lastmodifieddate";
}

Result<std::vector<std::string>> ParseHubspotPropertyNames(const JsonPage& page) {
  std::vector<std::string> names;
  BIZON_RETURN_IF_ERROR(page.ForEachObject("results", {"name"}, [&](const JsonObjectView& entry) {
    if (entry.fields[0] && entry.fields[0]->is_string() && !entry.fields[0]->AsString().empty()) {
      names.push_back(entry.fields[0]->AsString());
    }
    return Status::Ok();
  }));
  return names;
}

Result<std::vector<std::string>> SelectHubspotProperties(const std::vector<std::string>& available,
                                                         std::string_view strategy,
                                                         const std::vector<std::string>& selected) {
  if (available.empty()) {
    return Fail(HubSpotError("HubSpot lists no properties for this object"));
  }
  if (strategy != "selected") return available;
  std::vector<std::string> chosen;
  for (const std::string& name : selected) {
    if (std::find(available.begin(), available.end(), name) == available.end()) {
      return Fail(Status(StatusCode::kInvalidArgument,
                         fmt::format("Property {} is not present in HubSpot.", name),
                         FailureClass::kConfig));
    }
    if (std::find(chosen.begin(), chosen.end(), name) == chosen.end()) chosen.push_back(name);
  }
  if (chosen.empty()) {
    return Fail(Status(StatusCode::kInvalidArgument,
                       "No properties selected to sync: properties.selected_properties is empty",
                       FailureClass::kConfig));
  }
  return chosen;
}

Result<HubspotObjectPage> ParseHubspotObjectPage(const JsonPage& page,
                                                 std::string_view modified_property) {
  HubspotObjectPage out;
  std::string modified_path = fmt::format("properties.{}", modified_property);
  BIZON_RETURN_IF_ERROR(page.ForEachObject(
      "results", {"id", modified_path, "updatedAt"},
      [&](const JsonObjectView& result) {
        const std::optional<Value>& id = result.fields[0];
        if (!id || !id->is_string() || id->AsString().empty()) {
          return HubSpotError(
              fmt::format("result {} of {} has no string 'id'", result.index, page.origin()));
        }
        std::optional<int64_t> modified = MillisOf(result.fields[1]);
        if (!modified) modified = MillisOf(result.fields[2]);
        out.objects.push_back({id->AsString(), std::string(result.json), modified});
        return Status::Ok();
      },
      /*missing_is_empty=*/true));
  BIZON_ASSIGN_OR_RETURN(std::optional<Value> after, page.Find("paging.next.after"));
  if (after && (after->is_string() || after->is_integer())) {
    std::string text = after->ToDisplayString();
    if (!text.empty()) out.next_after = std::move(text);
  }
  if (out.next_after) {
    BIZON_ASSIGN_OR_RETURN(std::optional<Value> link, page.Find("paging.next.link"));
    if (link && link->is_string()) out.next_link = link->AsString();
  }
  BIZON_ASSIGN_OR_RETURN(std::optional<Value> total, page.Find("total"));
  if (total && total->is_integer()) out.total = total->AsInteger();
  return out;
}

Value HubspotSearchCursor::ToValue() const {
  Value value(Value::Map{{"lower_ms", Value(lower_ms)}, {"read_in_window", Value(read_in_window)}});
  if (after) value.Set("after", Value(*after));
  if (tail_ms) {
    value.Set("tail_ms", Value(*tail_ms));
    value.Set("tail_ids", StringList(tail_ids));
  }
  if (!skip_ids.empty()) value.Set("skip_ids", StringList(skip_ids));
  return value;
}

Result<HubspotSearchCursor> HubspotSearchCursor::FromValue(const Value& pagination,
                                                           int64_t lower_ms) {
  HubspotSearchCursor cursor;
  cursor.lower_ms = lower_ms;
  if (!pagination.is_map() || pagination.AsMap().empty()) return cursor;
  const Value* lower = pagination.Find("lower_ms");
  if (lower == nullptr || !lower->is_integer()) {
    return Fail(HubSpotError(
        fmt::format("the saved HubSpot search cursor has no lower_ms: {}", pagination.ToJson())));
  }
  cursor.lower_ms = lower->AsInteger();
  if (const Value* after = pagination.Find("after"); after != nullptr && !after->is_null()) {
    cursor.after = after->ToDisplayString();
  }
  cursor.read_in_window = pagination.GetInteger("read_in_window", 0);
  if (const Value* tail = pagination.Find("tail_ms"); tail != nullptr && tail->is_integer()) {
    cursor.tail_ms = tail->AsInteger();
    cursor.tail_ids = StringsOf(pagination.Find("tail_ids"));
  }
  cursor.skip_ids = StringsOf(pagination.Find("skip_ids"));
  return cursor;
}

std::string HubspotSearchBody(const HubspotSearchCursor& cursor, int64_t upper_ms,
                              std::string_view modified_property,
                              const std::vector<std::string>& properties, int64_t limit) {
  Value filters(Value::List{Filter(modified_property, "GTE", cursor.lower_ms),
                            Filter(modified_property, "LT", upper_ms)});
  Value body(Value::Map{
      {"filterGroups", Value(Value::List{Value(Value::Map{{"filters", std::move(filters)}})})},
      {"sorts", Value(Value::List{Value(Value::Map{{"propertyName", Value(modified_property)},
                                                   {"direction", "ASCENDING"}})})},
      {"limit", Value(limit)},
  });
  if (!properties.empty()) body.Set("properties", StringList(properties));
  if (cursor.after) body.Set("after", Value(*cursor.after));
  return body.ToJson();
}

Result<HubspotSearchStep> AdvanceHubspotSearch(const HubspotSearchCursor& cursor,
                                               HubspotObjectPage page, int64_t limit, int64_t cap) {
  HubspotSearchStep step;
  HubspotSearchCursor next = cursor;
  next.read_in_window += static_cast<int64_t>(page.objects.size());
  for (HubspotObject& object : page.objects) {
    if (object.modified_ms) {
      if (!next.tail_ms || *object.modified_ms > *next.tail_ms) {
        next.tail_ms = object.modified_ms;
        next.tail_ids = {object.id};
      } else if (*object.modified_ms == *next.tail_ms) {
        next.tail_ids.push_back(object.id);
      }
    }
    bool emitted_before = object.modified_ms && *object.modified_ms == cursor.lower_ms &&
                          std::find(cursor.skip_ids.begin(), cursor.skip_ids.end(), object.id) !=
                              cursor.skip_ids.end();
    if (!emitted_before) step.emit.push_back(std::move(object));
  }
  bool more = page.next_after || (page.total && *page.total > next.read_in_window);
  if (!more) return step;  // The window is exhausted.
  if (page.next_after && next.read_in_window + limit <= cap) {
    next.after = page.next_after;
    step.next = std::move(next);
    return step;
  }
  // The next page would pass the cap: query again from the newest modification time read.
  if (!next.tail_ms || *next.tail_ms <= cursor.lower_ms) {
    return Fail(HubSpotError(fmt::format(
        "the HubSpot search cannot move past {} results: more than that many objects share the "
        "modification time {} (ms since the epoch)",
        cap, cursor.lower_ms)));
  }
  HubspotSearchCursor moved;
  moved.lower_ms = *next.tail_ms;
  moved.skip_ids = std::move(next.tail_ids);  // Read again first by the new query.
  step.next = std::move(moved);
  return step;
}

std::string HubspotRateLimitPolicy(std::string_view body) {
  return ErrorField(Value::FromJson(body), "policyName");
}

std::string HubspotErrorSummary(std::string_view body) {
  Result<Value> parsed = Value::FromJson(body);
  std::string message = ErrorField(parsed, "message");
  if (message.empty()) return "";
  std::string kind = ErrorField(parsed, "category");
  if (kind.empty()) kind = ErrorField(parsed, "errorType");
  if (kind.empty()) kind = ErrorField(parsed, "status");
  if (std::string policy = ErrorField(parsed, "policyName"); !policy.empty()) {
    kind += kind.empty() ? policy : " " + policy;
  }
  return kind.empty() ? message : kind + ": " + message;
}

}  // namespace bizon
