// The rest_api readers take each default from the declaration alone: blocks built in code, never
// validated (so without the defaults validation fills in), read as the documented defaults.
#include "connectors/sources/rest_api/rest_api_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "connectors/sources/rest_api/resource_session.h"

namespace bizon {
namespace {

Value Json(const std::string& text) { return Value::FromJson(text).value(); }

// `block` read as the `pagination` block of an endpoints entry.
PaginationSpec Paging(const std::string& block) {
  Value source = Json(R"({"base_url": "https://api.example.com", "endpoints": {"users": {
      "path": "/users", "pagination": )" +
                      block + "}}}");
  auto entry = EndpointOf(source, "users");
  EXPECT_TRUE(entry.has_value()) << entry.error().ToString();
  return entry ? entry->spec.pagination : PaginationSpec{};
}

TEST(RestApiSpecTest, AnEndpointLeftToItsDefaultsReadsTheDeclaredOnes) {
  Value source = Json(R"({"base_url": "https://api.example.com/v1",
                          "endpoints": {"users": {"path": "/users", "total_path": "meta.n"}}})");
  auto entry = EndpointOf(source, "users");
  ASSERT_TRUE(entry.has_value()) << entry.error().ToString();
  EXPECT_EQ(entry->spec.url, "https://api.example.com/v1/users");
  EXPECT_EQ(entry->spec.method, "GET");
  EXPECT_EQ(entry->spec.record_id, "id");
  EXPECT_EQ(entry->spec.record_selector, "");
  EXPECT_EQ(entry->spec.pagination.type, PaginationSpec::Type::kNone);
  EXPECT_FALSE(entry->spec.incremental.has_value());
  EXPECT_EQ(entry->total_path, "meta.n");
}

TEST(RestApiSpecTest, EachPaginationTypeTakesItsDeclaredDefaults) {
  PaginationSpec offset = Paging(R"({"type": "offset"})");
  EXPECT_EQ(offset.type, PaginationSpec::Type::kOffset);
  EXPECT_EQ(offset.offset_param, "offset");
  EXPECT_EQ(offset.limit_param, "limit");
  EXPECT_EQ(offset.limit, 100);
  EXPECT_EQ(offset.start_offset, 0);
  EXPECT_FALSE(offset.past_empty_pages);
  EXPECT_FALSE(offset.in_body);
  EXPECT_FALSE(offset.maximum_offset.has_value());

  PaginationSpec pages = Paging(R"({"type": "page_number", "stop_after_empty_page": false,
                                    "maximum_page": 9})");
  EXPECT_EQ(pages.page_param, "page");
  EXPECT_EQ(pages.start_page, 1);
  EXPECT_FALSE(pages.page_size.has_value());
  EXPECT_TRUE(pages.past_empty_pages);
  EXPECT_EQ(pages.maximum_page, 9);

  PaginationSpec cursor = Paging(R"({"type": "cursor"})");
  EXPECT_EQ(cursor.cursor_param, "cursor");
  EXPECT_EQ(cursor.cursor_path, "next_cursor");
  EXPECT_EQ(Paging(R"({"type": "next_url"})").next_url_path, "next");
  EXPECT_EQ(Paging(R"({"type": "link_header"})").type, PaginationSpec::Type::kLinkHeader);
}

TEST(RestApiSpecTest, AnIncrementalBlockTakesTheSourceCursorFieldUnlessItNamesOne) {
  Value source = Json(R"({"base_url": "https://api.example.com", "cursor_field": "updated_at",
                          "endpoints": {"a": {"path": "/a", "incremental": {"param": "since"}},
                                        "b": {"path": "/b", "incremental": {"param": "since",
                                              "cursor_field": "modified"}}}})");
  auto a = EndpointOf(source, "a");
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  ASSERT_TRUE(a->spec.incremental.has_value());
  EXPECT_EQ(a->spec.incremental->cursor_field, "updated_at");
  EXPECT_EQ(a->spec.incremental->format, "iso8601");
  EXPECT_EQ(a->spec.incremental->end_param, "");
  auto b = EndpointOf(source, "b");
  ASSERT_TRUE(b.has_value()) << b.error().ToString();
  EXPECT_EQ(b->spec.incremental->cursor_field, "modified");
}

TEST(RestApiSpecTest, AResourceIncrementalBlockTakesItsDeclaredDefaults) {
  OptionReader resource(ResourceDeclaration(), Json(R"({"name": "r", "incremental": {}})"));
  IncrementalSpec window = ResourceIncrementalOf(resource.Object("incremental"), "id");
  EXPECT_TRUE(resource.status().ok()) << resource.status().ToString();
  EXPECT_EQ(window.cursor_field, "id");
  EXPECT_EQ(window.lag, 0.0);
  EXPECT_EQ(window.row_order, IncrementalSpec::RowOrder::kNone);
  EXPECT_EQ(window.on_cursor_value_missing, IncrementalSpec::MissingCursor::kRaise);
  EXPECT_FALSE(window.initial_value.has_value());
}

TEST(RestApiSpecTest, AnApiKeyGoesInTheAuthorizationHeaderUnlessToldOtherwise) {
  auto header = MakeResourceAuthenticator(Json(R"({"type": "api_key", "api_key": "k1"})"));
  ASSERT_TRUE(header.has_value()) << header.error().ToString();
  HttpRequest request;
  ASSERT_TRUE((*header)->Apply(request).ok());
  ASSERT_EQ(request.headers.size(), 1u);
  EXPECT_EQ(request.headers[0].first, "Authorization");
  EXPECT_EQ(request.headers[0].second, "k1");
  EXPECT_TRUE(request.query.empty());

  auto query = MakeResourceAuthenticator(
      Json(R"({"type": "api_key", "api_key": "k2", "name": "key", "location": "query"})"));
  ASSERT_TRUE(query.has_value()) << query.error().ToString();
  HttpRequest keyed;
  ASSERT_TRUE((*query)->Apply(keyed).ok());
  EXPECT_EQ(keyed.query, (QueryParams{{"key", "k2"}}));
}

TEST(RestApiSpecTest, ResponseActionsReadEachItemAgainstItsDeclaration) {
  Value list =
      Json(R"([{"status_code": 404, "action": "ignore"}, {"content": "busy", "action": "retry"}])");
  auto actions = ResponseActionsOf(&list);
  ASSERT_TRUE(actions.has_value()) << actions.error().ToString();
  ASSERT_EQ(actions->size(), 2u);
  EXPECT_EQ((*actions)[0].status_code, 404);
  EXPECT_EQ((*actions)[0].action, ResponseAction::Kind::kIgnore);
  EXPECT_EQ((*actions)[0].content, "");
  EXPECT_FALSE((*actions)[1].status_code.has_value());
  EXPECT_EQ((*actions)[1].content, "busy");
  EXPECT_EQ((*actions)[1].action, ResponseAction::Kind::kRetry);
}

}  // namespace
}  // namespace bizon
