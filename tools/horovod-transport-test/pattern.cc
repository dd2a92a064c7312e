#include "pattern.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace hvd_conformance {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x;
}

inline uint64_t word(uint64_t seed, uint64_t index) {
  return seed ^ ((index + 1) * kGolden);
}

}  // namespace

uint64_t seed_of(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return mix(mix(mix(mix(a + 1) + b) + c) + d);
}

void fill(void* buf, size_t bytes, uint64_t seed) {
  auto* p = static_cast<uint8_t*>(buf);
  size_t words = bytes / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w = word(seed, i);
    std::memcpy(p + i * 8, &w, 8);
  }
  uint64_t last = word(seed, words);
  std::memcpy(p + words * 8, &last, bytes % 8);
}

int64_t verify(const void* buf, size_t bytes, uint64_t seed) {
  const auto* p = static_cast<const uint8_t*>(buf);
  size_t words = bytes / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w = word(seed, i);
    uint64_t got;
    std::memcpy(&got, p + i * 8, 8);
    if (got != w) {
      for (size_t b = 0; b < 8; ++b) {
        if (p[i * 8 + b] != reinterpret_cast<const uint8_t*>(&w)[b]) {
          return static_cast<int64_t>(i * 8 + b);
        }
      }
    }
  }
  uint64_t last = word(seed, words);
  for (size_t b = 0; b < bytes % 8; ++b) {
    if (p[words * 8 + b] != reinterpret_cast<const uint8_t*>(&last)[b]) {
      return static_cast<int64_t>(words * 8 + b);
    }
  }
  return -1;
}

Buffer::Buffer(size_t bytes) : size_(bytes) {
  size_t rounded = ((bytes + 4095) / 4096) * 4096;
  if (rounded == 0) rounded = 4096;
  void* p = std::aligned_alloc(4096, rounded);
  if (p == nullptr) throw std::bad_alloc();
  data_.reset(static_cast<uint8_t*>(p));
}

void Buffer::Free::operator()(uint8_t* p) const { std::free(p); }

}  // namespace hvd_conformance
