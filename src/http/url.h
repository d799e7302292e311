// URL text helpers: percent-encoding, query strings, joining a base URL and a path, and the
// `Link` header (RFC 8288) that some APIs paginate with.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bizon {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

/// Percent-encodes everything but RFC 3986 unreserved characters.
std::string PercentEncode(std::string_view text);

/// "a=1&b=x%20y": the body of a form POST, or a query string.
std::string FormEncode(const QueryParams& params);

/// Appends `params` to `url` with `?` or `&`.
std::string AppendQuery(std::string url, const QueryParams& params);

/// `path` as is when it is an absolute URL, else `base` and `path` joined by exactly one '/'.
std::string JoinUrl(std::string_view base, std::string_view path);

/// `reference` resolved against `current` (RFC 3986 in the forms APIs use: absolute,
/// network-path "//h/p", absolute-path "/p", query "?q", relative "p").
std::string ResolveUrl(std::string_view current, std::string_view reference);

/// The target of the first link with relation `rel` in a Link header value, if any.
std::optional<std::string> FindLink(std::string_view link_header, std::string_view rel = "next");

}  // namespace bizon
