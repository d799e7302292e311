// How every backend stores a pagination: an empty one (nothing but whitespace, `null`, `{}`)
// means "the source is exhausted" and is stored as NULL, as in the original.
#pragma once

#include <string_view>

namespace bizon {

inline bool IsEmptyPagination(std::string_view text) {
  constexpr std::string_view kWhitespace = " \t\r\n";
  size_t begin = text.find_first_not_of(kWhitespace);
  if (begin == std::string_view::npos) return true;
  text = text.substr(begin, text.find_last_not_of(kWhitespace) - begin + 1);
  if (text == "null") return true;
  return text.front() == '{' && text.back() == '}' &&
         text.substr(1, text.size() - 2).find_first_not_of(kWhitespace) == std::string_view::npos;
}

}  // namespace bizon
