#include "connectors/sources/cycle/cycle_customers.h"

#include <fmt/format.h>

namespace bizon {
namespace {

constexpr std::string_view kConnection = "data.getProductBySlug.customers";

Status SourceError(std::string message) {
  return Status(StatusCode::kFailedPrecondition, std::move(message), FailureClass::kSource);
}

// "UNAUTHORIZED: Unauthorized; CANT_SEE_PRODUCT: ..." from a GraphQL `errors` list.
std::string DescribeErrors(const Value& errors) {
  std::string out;
  for (const Value& error : errors.AsList()) {
    if (!out.empty()) out += "; ";
    if (!error.is_map()) {
      out += error.ToJson();
      continue;
    }
    std::string message = error.GetString("message");
    const Value* extensions = error.Find("extensions");
    std::string code = extensions != nullptr && extensions->is_map() ? extensions->GetString("code")
                                                                     : std::string();
    out += code.empty() ? message : fmt::format("{}: {}", code, message);
  }
  return out;
}

}  // namespace

std::string CycleCustomersQuery(std::string_view end_cursor) {
  std::string pagination = fmt::format("size: {}", kCycleCustomersPageSize);
  if (!end_cursor.empty()) {
    // GraphQL string literals take JSON's escapes.
    std::string literal;
    AppendJsonString(literal, end_cursor);
    pagination += fmt::format(", where: {{ cursor: {}, direction: AFTER }}", literal);
  }
  return fmt::format(
      "query Customers($slug: DefaultString!) {{ getProductBySlug(slug: $slug) {{ "
      "customers(pagination: {{ {} }}) {{ edges {{ cursor node {{ id email name "
      "company {{ domain id name }} }} }} pageInfo {{ hasPreviousPage hasNextPage startCursor "
      "endCursor }} }} }} }}",
      pagination);
}

std::string CycleCustomersRequestBody(std::string_view slug, const Value& pagination) {
  std::string end_cursor = pagination.is_map() ? pagination.GetString("endCursor") : "";
  Value body(Value::Map{{"query", Value(CycleCustomersQuery(end_cursor))},
                        {"variables", Value(Value::Map{{"slug", Value(std::string(slug))}})}});
  return body.ToJson();
}

Result<SourceIteration> ReadCycleCustomersPage(const JsonPage& page, std::string_view slug,
                                               int64_t extracted_at_us) {
  BIZON_ASSIGN_OR_RETURN(std::optional<Value> errors, page.Find("errors"));
  if (errors && errors->is_list() && !errors->AsList().empty()) {
    return Fail(SourceError(fmt::format("the Cycle API refused the customers query of {}: {}",
                                        page.origin(), DescribeErrors(*errors))));
  }
  BIZON_ASSIGN_OR_RETURN(std::optional<Value> product, page.Find("data.getProductBySlug"));
  if (!product || product->is_null()) {
    return Fail(SourceError(
        fmt::format("the Cycle API knows no product the token can see with this slug: {}", slug)));
  }
  SourceIteration iteration;
  Status bad_edge;
  BIZON_RETURN_IF_ERROR(page.ForEachObject(
      fmt::format("{}.edges", kConnection), {"node", "node.id"},
      [&](const JsonObjectView& edge) -> Status {
        const std::optional<Value>& node = edge.fields[0];
        const std::optional<Value>& id = edge.fields[1];
        if (!node || !node->is_map() || !id || !id->is_string() || id->AsString().empty()) {
          return SourceError(fmt::format(
              "a customer edge of the Cycle answer has no node with a string id: {} edge {}",
              page.origin(), edge.index));
        }
        iteration.records.Add(id->AsString(), node->ToJson(), extracted_at_us);
        return Status::Ok();
      }));
  BIZON_ASSIGN_OR_RETURN(std::optional<Value> page_info,
                         page.Find(fmt::format("{}.pageInfo", kConnection)));
  if (!page_info || !page_info->is_map()) {
    return Fail(SourceError(
        fmt::format("the Cycle answer has no customers.pageInfo object: {}", page.origin())));
  }
  const Value* has_next = page_info->Find("hasNextPage");
  if (has_next == nullptr || !has_next->is_bool()) {
    return Fail(SourceError(
        fmt::format("the Cycle answer has no boolean pageInfo.hasNextPage: {}", page.origin())));
  }
  if (has_next->AsBool()) {
    // Without a cursor the next request would ask for the first page again, forever.
    if (page_info->GetString("endCursor").empty()) {
      return Fail(SourceError(fmt::format(
          "the Cycle answer says hasNextPage but gives no endCursor: {}", page.origin())));
    }
    iteration.next_pagination = *page_info;
  }
  return iteration;
}

}  // namespace bizon
