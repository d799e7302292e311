// Fuzz target: an HTTP response body as the REST toolkit reads it (http/json_page.h). The first
// line of the input, when it is short, is the dotted path of the records array (and of a
// next-page token); the rest is the body. Each record is visited with a few fields extracted, as
// a source extracts its id, cursor and nested values.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "http/json_page.h"

namespace {

constexpr size_t kMaxPathBytes = 64;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view path = "results";
  if (size_t newline = input.find('\n');
      newline != std::string_view::npos && newline <= kMaxPathBytes) {
    path = input.substr(0, newline);
    input.remove_prefix(newline + 1);
  }
  bizon::JsonPage page{std::string(input), "GET https://fuzz.example/items"};
  (void)page.Find(path);
  (void)page.Find("");
  (void)page.Find("paging.next.after");
  static const std::vector<std::string> kFields = {"id", "updated_at", "meta.tags.0", ""};
  for (bool missing_is_empty : {false, true}) {
    (void)page.ForEachObject(
        path, kFields,
        [](const bizon::JsonObjectView& object) {
          // The bytes handed over must be a whole JSON object of the page.
          if (object.json.empty() || object.json.front() != '{' || object.json.back() != '}') {
            __builtin_trap();
          }
          return bizon::Status::Ok();
        },
        missing_is_empty);
  }
  (void)page.ForEachObject("", kFields,
                           [](const bizon::JsonObjectView&) { return bizon::Status::Ok(); });
  return 0;
}
