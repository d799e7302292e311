#include "monitoring/telemetry_http.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>

namespace bizon {
namespace {

size_t Collect(char* data, size_t size, size_t count, void* out) {
  auto* body = static_cast<std::string*>(out);
  // An intake's answer is small; anything past 64 KiB is not needed to judge the delivery.
  if (body->size() < 65536) body->append(data, size * count);
  return size * count;
}

}  // namespace

Result<TelemetryResponse> SendTelemetry(const std::string& method, const std::string& url,
                                        const TelemetryHeaders& headers, const std::string& body) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return Fail(Status(StatusCode::kInternal, "cannot create an HTTP handle"));
  curl_slist* list = nullptr;
  for (const auto& [name, value] : headers) {
    list = curl_slist_append(list, fmt::format("{}: {}", name, value).c_str());
  }
  list = curl_slist_append(list, "Expect:");
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(list,
                                                                          curl_slist_free_all);
  TelemetryResponse response;
  CURL* handle = curl.get();
  curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
  curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(handle, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, header_list.get());
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
  curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, 2000L);
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &response.body);
  CURLcode code = curl_easy_perform(handle);
  if (code != CURLE_OK) {
    return Fail(Status(StatusCode::kUnavailable,
                       fmt::format("{} {}: {}", method, url, curl_easy_strerror(code))));
  }
  long status = 0;
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
  response.status = static_cast<int>(status);
  if (status < 200 || status >= 300) {
    return Fail(Status(StatusCode::kUnavailable,
                       fmt::format("{} {}: HTTP {}", method, url, response.status)));
  }
  return response;
}

uint32_t Crc32(std::string_view bytes) {
  static const std::array<uint32_t, 256> kTable = [] {
    std::array<uint32_t, 256> table{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int bit = 0; bit < 8; ++bit) c = (c & 1) != 0 ? 0xEDB88320U ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    return table;
  }();
  uint32_t crc = 0xFFFFFFFFU;
  for (char byte : bytes) crc = kTable[(crc ^ static_cast<uint8_t>(byte)) & 0xff] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFU;
}

std::string GzipStored(std::string_view body) {
  auto little_endian = [](std::string& out, uint32_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  };
  constexpr size_t kBlock = 65535;  // The most a stored block holds.
  // ID1 ID2, CM deflate, no flags, no modification time, no extra flags, OS unknown.
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  out.reserve(out.size() + body.size() + 5 * (body.size() / kBlock + 1) + 8);
  size_t at = 0;
  do {
    size_t length = std::min(kBlock, body.size() - at);
    bool last = at + length == body.size();
    out.push_back(last ? '\x01' : '\x00');  // BFINAL, BTYPE 00 (stored).
    little_endian(out, static_cast<uint32_t>(length), 2);
    little_endian(out, static_cast<uint32_t>(~length & 0xffff), 2);
    out.append(body.substr(at, length));
    at += length;
  } while (at < body.size());
  little_endian(out, Crc32(body), 4);
  little_endian(out, static_cast<uint32_t>(body.size()), 4);  // ISIZE: the size modulo 2^32.
  return out;
}

}  // namespace bizon
