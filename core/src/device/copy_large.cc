#include <cstdint>
#include <cstring>

#include "device/device.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hvd {
namespace {

#if defined(__x86_64__)

// Copies that do not fit comfortably in the last-level cache gain from
// streaming stores (no read for ownership of the destination, no eviction
// of the working set); smaller ones are better served by cached memcpy,
// since the destination is usually read again soon.
constexpr size_t kStreamThreshold = size_t(4) << 20;

// Copies the bytes up to the next 64-byte boundary of dst; returns them.
size_t align_head(char* dst, const char* src, size_t bytes) {
  size_t head = (64 - ((uintptr_t)dst & 63)) & 63;
  if (head > bytes) head = bytes;
  std::memcpy(dst, src, head);
  return head;
}

__attribute__((target("avx"))) void stream_copy_avx(char* dst, const char* src,
                                                    size_t bytes) {
  const size_t head = align_head(dst, src, bytes);
  dst += head;
  src += head;
  bytes -= head;
  for (; bytes >= 128; bytes -= 128, dst += 128, src += 128) {
    const __m256i a = _mm256_loadu_si256((const __m256i*)src);
    const __m256i b = _mm256_loadu_si256((const __m256i*)(src + 32));
    const __m256i c = _mm256_loadu_si256((const __m256i*)(src + 64));
    const __m256i d = _mm256_loadu_si256((const __m256i*)(src + 96));
    _mm256_stream_si256((__m256i*)dst, a);
    _mm256_stream_si256((__m256i*)(dst + 32), b);
    _mm256_stream_si256((__m256i*)(dst + 64), c);
    _mm256_stream_si256((__m256i*)(dst + 96), d);
  }
  _mm_sfence();
  std::memcpy(dst, src, bytes);
}

void stream_copy_sse2(char* dst, const char* src, size_t bytes) {
  const size_t head = align_head(dst, src, bytes);
  dst += head;
  src += head;
  bytes -= head;
  for (; bytes >= 64; bytes -= 64, dst += 64, src += 64) {
    const __m128i a = _mm_loadu_si128((const __m128i*)src);
    const __m128i b = _mm_loadu_si128((const __m128i*)(src + 16));
    const __m128i c = _mm_loadu_si128((const __m128i*)(src + 32));
    const __m128i d = _mm_loadu_si128((const __m128i*)(src + 48));
    _mm_stream_si128((__m128i*)dst, a);
    _mm_stream_si128((__m128i*)(dst + 16), b);
    _mm_stream_si128((__m128i*)(dst + 32), c);
    _mm_stream_si128((__m128i*)(dst + 48), d);
  }
  _mm_sfence();
  std::memcpy(dst, src, bytes);
}

bool cpu_has_avx() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") != 0;
  }();
  return has;
}

#endif

bool overlapping(const void* dst, const void* src, size_t bytes) {
  const uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
  return d < s + bytes && s < d + bytes;
}

}  // namespace

size_t copy_large_threshold() {
#if defined(__x86_64__)
  return kStreamThreshold;
#else
  return SIZE_MAX;
#endif
}

void copy_large(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (overlapping(dst, src, bytes)) {
    std::memmove(dst, src, bytes);
    return;
  }
#if defined(__x86_64__)
  if (bytes >= kStreamThreshold) {
    if (cpu_has_avx()) {
      stream_copy_avx(static_cast<char*>(dst), static_cast<const char*>(src),
                      bytes);
    } else {
      stream_copy_sse2(static_cast<char*>(dst), static_cast<const char*>(src),
                       bytes);
    }
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

}  // namespace hvd
