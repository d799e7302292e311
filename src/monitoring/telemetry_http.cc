#include "monitoring/telemetry_http.h"

#include <curl/curl.h>
#include <fmt/format.h>

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

}  // namespace bizon
