// A copy that writes its destination with non-temporal (streaming) stores.
// glibc's memcpy switches to them only past a threshold derived from the
// reported cache size, and below it a copy of tens of MiB runs at a fraction
// of the memory bandwidth: each destination line is first read into the
// cache, then written back, evicting the working set. Worth it where the
// destination is large and nobody reads it again soon; each caller chooses
// from what size on (a plain memcpy below).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hvd_plugin {
namespace stream_copy_detail {

#if defined(__x86_64__)

// Copies the bytes up to the next cache-line boundary of `dst` with memcpy,
// so every streaming store fills whole lines.
inline void align_head(uint8_t*& dst, const uint8_t*& src, size_t& bytes) {
  size_t head = (64 - (reinterpret_cast<uintptr_t>(dst) & 63)) & 63;
  if (head > bytes) head = bytes;
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
}

__attribute__((target("avx"))) inline void copy_avx(uint8_t* dst,
                                                    const uint8_t* src,
                                                    size_t bytes) {
  align_head(dst, src, bytes);
  for (; bytes >= 128; bytes -= 128, dst += 128, src += 128) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32));
    __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 64));
    __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 96), d);
  }
  _mm_sfence();
  std::memcpy(dst, src, bytes);
}

inline void copy_sse2(uint8_t* dst, const uint8_t* src, size_t bytes) {
  align_head(dst, src, bytes);
  for (; bytes >= 64; bytes -= 64, dst += 64, src += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
    __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
  }
  _mm_sfence();
  std::memcpy(dst, src, bytes);
}

inline bool have_avx() {
  static const bool avx = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") != 0;
  }();
  return avx;
}

#endif

}  // namespace stream_copy_detail

// Whether stream_copy() uses streaming stores on this machine (memcpy where
// it does not).
constexpr bool kHaveStreamCopy =
#if defined(__x86_64__)
    true;
#else
    false;
#endif

// Like memcpy (no overlap), of any size, with streaming stores for all but
// the unaligned head and the tail; they are fenced before it returns.
inline void stream_copy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  namespace detail = stream_copy_detail;
  auto* d = static_cast<uint8_t*>(dst);
  auto* s = static_cast<const uint8_t*>(src);
  if (detail::have_avx()) {
    detail::copy_avx(d, s, bytes);
  } else {
    detail::copy_sse2(d, s, bytes);
  }
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace hvd_plugin
