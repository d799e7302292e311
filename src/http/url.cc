#include "http/url.h"

#include <fmt/format.h>

#include <cctype>

#include "common/ascii.h"

namespace bizon {
namespace {

bool HasScheme(std::string_view url) {
  size_t colon = url.find("://");
  if (colon == std::string_view::npos || colon == 0) return false;
  for (size_t i = 0; i < colon; ++i) {
    char c = url[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string PercentEncode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      fmt::format_to(std::back_inserter(out), "%{:02X}", byte);
    }
  }
  return out;
}

std::string FormEncode(const QueryParams& params) {
  std::string out;
  for (const auto& [key, value] : params) {
    if (!out.empty()) out.push_back('&');
    out += PercentEncode(key);
    out.push_back('=');
    out += PercentEncode(value);
  }
  return out;
}

std::string AppendQuery(std::string url, const QueryParams& params) {
  if (params.empty()) return url;
  size_t fragment = url.find('#');
  std::string tail;
  if (fragment != std::string::npos) {
    tail = url.substr(fragment);
    url.resize(fragment);
  }
  char separator = url.find('?') == std::string::npos ? '?' : '&';
  if (!url.empty() && (url.back() == '?' || url.back() == '&')) separator = '\0';
  if (separator != '\0') url.push_back(separator);
  url += FormEncode(params);
  return url + tail;
}

std::string JoinUrl(std::string_view base, std::string_view path) {
  if (HasScheme(path)) return std::string(path);
  if (path.empty()) return std::string(base);
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  return fmt::format("{}/{}", base, path);
}

std::string ResolveUrl(std::string_view current, std::string_view reference) {
  if (reference.empty()) return std::string(current);
  if (HasScheme(reference)) return std::string(reference);
  size_t scheme_end = current.find("://");
  if (scheme_end == std::string_view::npos) return std::string(reference);
  if (reference.starts_with("//")) {
    return fmt::format("{}:{}", current.substr(0, scheme_end), reference);
  }
  size_t path_start = current.find('/', scheme_end + 3);
  std::string_view origin = current.substr(0, path_start);
  if (reference.front() == '/') return fmt::format("{}{}", origin, reference);
  std::string_view without_query = current.substr(0, current.find_first_of("?#"));
  if (reference.front() == '?') return fmt::format("{}{}", without_query, reference);
  size_t last_slash = without_query.rfind('/');
  if (last_slash == std::string_view::npos || last_slash < scheme_end + 3) {
    return fmt::format("{}/{}", origin, reference);
  }
  return fmt::format("{}{}", without_query.substr(0, last_slash + 1), reference);
}

std::optional<std::string> FindLink(std::string_view link_header, std::string_view rel) {
  // Link: <https://api/x?page=2>; rel="next", <https://api/x?page=9>; rel="last"
  size_t pos = 0;
  while (pos < link_header.size()) {
    size_t open = link_header.find('<', pos);
    if (open == std::string_view::npos) return std::nullopt;
    size_t close = link_header.find('>', open);
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view target = link_header.substr(open + 1, close - open - 1);
    size_t next = link_header.find('<', close);
    std::string_view params = TrimAsciiSpace(link_header.substr(
        close + 1, next == std::string_view::npos ? std::string_view::npos : next - close - 1));
    // The comma separating this link from the next one.
    if (!params.empty() && params.back() == ',') params.remove_suffix(1);
    size_t start = 0;
    while (start < params.size()) {
      size_t semicolon = params.find(';', start);
      std::string_view param = TrimAsciiSpace(params.substr(
          start, semicolon == std::string_view::npos ? std::string_view::npos : semicolon - start));
      start = semicolon == std::string_view::npos ? params.size() : semicolon + 1;
      if (param.size() < 4 || param.substr(0, 3) != "rel") continue;
      std::string_view value = TrimAsciiSpace(param.substr(3));
      if (value.empty() || value.front() != '=') continue;
      value = TrimAsciiSpace(value.substr(1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
        value = value.substr(1, value.size() - 2);
      }
      // rel may hold several space-separated relations.
      size_t word = 0;
      while (word < value.size()) {
        size_t space = value.find(' ', word);
        std::string_view relation = value.substr(
            word, space == std::string_view::npos ? std::string_view::npos : space - word);
        if (relation == rel) return std::string(TrimAsciiSpace(target));
        word = space == std::string_view::npos ? value.size() : space + 1;
      }
    }
    pos = next == std::string_view::npos ? link_header.size() : next;
  }
  return std::nullopt;
}

}  // namespace bizon
