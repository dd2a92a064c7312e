#include "copy.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hvd_shm {
namespace {

// Below this a streaming copy's fence and alignment prologue cost more than
// they save.
constexpr size_t kStreamingMinimum = 4096;

#if defined(__x86_64__)

// Copies the head so `dst` becomes `alignment`-aligned; returns the bytes
// done.
size_t align_head(uint8_t*& dst, const uint8_t*& src, size_t& bytes,
                  size_t alignment) {
  size_t head =
      (alignment - (reinterpret_cast<uintptr_t>(dst) & (alignment - 1))) &
      (alignment - 1);
  if (head > bytes) head = bytes;
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  return head;
}

__attribute__((target("avx2"))) void stream_copy_avx2(uint8_t* dst,
                                                      const uint8_t* src,
                                                      size_t bytes) {
  align_head(dst, src, bytes, 32);
  size_t blocks = bytes / 128;
  for (size_t i = 0; i < blocks; ++i) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 32));
    __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 64));
    __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + 96), d);
    src += 128;
    dst += 128;
  }
  _mm_sfence();
  std::memcpy(dst, src, bytes % 128);
}

void stream_copy_sse2(uint8_t* dst, const uint8_t* src, size_t bytes) {
  align_head(dst, src, bytes, 16);
  size_t blocks = bytes / 64;
  for (size_t i = 0; i < blocks; ++i) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
    __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
    src += 64;
    dst += 64;
  }
  _mm_sfence();
  std::memcpy(dst, src, bytes % 64);
}

bool have_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}

#endif

}  // namespace

void stream_copy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  if (bytes >= kStreamingMinimum) {
    auto* d = static_cast<uint8_t*>(dst);
    auto* s = static_cast<const uint8_t*>(src);
    if (have_avx2()) {
      stream_copy_avx2(d, s, bytes);
    } else {
      stream_copy_sse2(d, s, bytes);
    }
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

void copy_bytes(void* dst, const void* src, size_t bytes, bool streaming) {
  if (streaming) {
    stream_copy(dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

}  // namespace hvd_shm
