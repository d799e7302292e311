#include "common/json_scan.h"

#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define BIZON_HAVE_AVX512_SCAN 1
#endif

namespace bizon::json_scan {
namespace {

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;

bool IsSpecial(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

/// A mask whose lowest set high bit marks the first of the eight bytes (little-endian order) that
/// IsSpecial; zero when none is. A borrow can set higher bits too, so only the lowest is read.
uint64_t SpecialMask(uint64_t x) {
  uint64_t quote = x ^ (kOnes * '"');
  uint64_t backslash = x ^ (kOnes * '\\');
  return (((x - kOnes * 0x20) & ~x) | ((quote - kOnes) & ~quote) |
          ((backslash - kOnes) & ~backslash)) &
         kHighs;
}

/// The first byte at or after `i` for which `word_mask` (eight bytes at a time: the lowest set
/// high bit marks the byte) and `test` (one byte) hold, or text.size().
template <typename WordMask, typename Test>
size_t FindSwar(std::string_view text, size_t i, WordMask word_mask, Test test) {
  const char* s = text.data();
  size_t n = text.size();
  if constexpr (std::endian::native == std::endian::little) {
    for (; i + 8 <= n; i += 8) {
      uint64_t x;
      std::memcpy(&x, s + i, 8);
      if (uint64_t mask = word_mask(x); mask != 0) {
        return i + static_cast<size_t>(std::countr_zero(mask)) / 8;
      }
    }
  }
  for (; i < n; ++i) {
    if (test(static_cast<unsigned char>(s[i]))) return i;
  }
  return n;
}

size_t FindSpecialSwar(std::string_view text, size_t i) {
  return FindSwar(text, i, SpecialMask, IsSpecial);
}

size_t FindNonAsciiSwar(std::string_view text, size_t i) {
  return FindSwar(
      text, i, [](uint64_t x) { return x & kHighs; }, [](unsigned char c) { return c >= 0x80; });
}

#ifdef BIZON_HAVE_AVX512_SCAN
/// Lanes [0, count) of a 64-byte block.
inline uint64_t Live(size_t count) { return count >= 64 ? ~0ULL : (1ULL << count) - 1; }

__attribute__((target("avx512f,avx512bw"))) size_t FindSpecialAvx512(std::string_view text,
                                                                     size_t i) {
  const __m512i quote = _mm512_set1_epi8('"');
  const __m512i backslash = _mm512_set1_epi8('\\');
  const __m512i space = _mm512_set1_epi8(0x20);
  for (; i < text.size(); i += 64) {
    __mmask64 live = Live(text.size() - i);
    __m512i x = _mm512_maskz_loadu_epi8(live, text.data() + i);  // Never reads past the text.
    __mmask64 special = _mm512_mask_cmpeq_epi8_mask(live, x, quote) |
                        _mm512_mask_cmpeq_epi8_mask(live, x, backslash) |
                        _mm512_mask_cmplt_epu8_mask(live, x, space);
    if (special != 0) return i + static_cast<size_t>(std::countr_zero(special));
  }
  return text.size();
}

__attribute__((target("avx512f,avx512bw"))) size_t FindNonAsciiAvx512(std::string_view text,
                                                                      size_t i) {
  for (; i < text.size(); i += 64) {
    __m512i x = _mm512_maskz_loadu_epi8(Live(text.size() - i), text.data() + i);
    if (__mmask64 high = _mm512_movepi8_mask(x); high != 0) {
      return i + static_cast<size_t>(std::countr_zero(high));
    }
  }
  return text.size();
}

bool CpuHasAvx512bw() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

const bool kAvx512 = CpuHasAvx512bw();
#else
const bool kAvx512 = false;
#endif

size_t FindSpecialOn(bool avx512, std::string_view text, size_t from) {
#ifdef BIZON_HAVE_AVX512_SCAN
  if (avx512) return FindSpecialAvx512(text, from);
#endif
  (void)avx512;
  return FindSpecialSwar(text, from);
}

size_t FindNonAsciiOn(bool avx512, std::string_view text, size_t from) {
#ifdef BIZON_HAVE_AVX512_SCAN
  if (avx512) return FindNonAsciiAvx512(text, from);
#endif
  (void)avx512;
  return FindNonAsciiSwar(text, from);
}

}  // namespace

size_t FindSpecial(std::string_view text, size_t from) {
  return FindSpecialOn(kAvx512, text, from);
}

size_t FindNonAscii(std::string_view text, size_t from) {
  return FindNonAsciiOn(kAvx512, text, from);
}

std::string_view Scanner() { return kAvx512 ? "avx512bw" : "swar"; }

std::vector<std::string_view> Scanners() {
  std::vector<std::string_view> scanners = {"swar"};
  if (kAvx512) scanners.push_back("avx512bw");
  return scanners;
}

size_t FindSpecialWith(std::string_view scanner, std::string_view text, size_t from) {
  return FindSpecialOn(scanner == "avx512bw" && kAvx512, text, from);
}

size_t FindNonAsciiWith(std::string_view scanner, std::string_view text, size_t from) {
  return FindNonAsciiOn(scanner == "avx512bw" && kAvx512, text, from);
}

}  // namespace bizon::json_scan
