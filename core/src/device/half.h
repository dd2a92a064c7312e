// Scalar conversions between float and the 16-bit float formats, rounding to
// nearest even. Portable (no _Float16, no F16C) and bit-exact with the F16C
// instructions, NaNs included (payload kept, made quiet), so ranks that take
// different kernel variants still agree bit for bit.
//
// The functions are `static inline` on purpose: the kernel files are compiled
// once per instruction set, and internal linkage keeps the linker from
// merging an AVX2 copy into the baseline variant.
#pragma once

#include <cstdint>
#include <cstring>

namespace hvd {

static inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

static inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Both directions are written without branches (every case computed, one
// selected) so that loops over them vectorise where F16C is not available.

// IEEE binary16 -> float (exact).
static inline float half_to_float(uint16_t h) {
  const uint32_t shifted_exp = 0x7c00u << 13;
  const uint32_t bits = (uint32_t)(h & 0x7fffu) << 13;
  const uint32_t exp = shifted_exp & bits;
  const uint32_t normal = bits + ((127u - 15u) << 23);
  // Inf / NaN: all exponent bits set; NaNs made quiet.
  const uint32_t special =
      (normal + ((128u - 16u) << 23)) | ((h & 0x03ffu) != 0 ? 0x00400000u : 0u);
  // Zero or subnormal: renormalised by a float subtraction, exact.
  const uint32_t small =
      float_bits(bits_float(normal + (1u << 23)) - bits_float(113u << 23));
  const uint32_t o = exp == shifted_exp ? special : exp == 0 ? small : normal;
  return bits_float(o | ((uint32_t)(h & 0x8000u) << 16));
}

// float -> IEEE binary16, round to nearest even; overflow gives infinity.
static inline uint16_t float_to_half(float f) {
  const uint32_t bits = float_bits(f);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t u = bits & 0x7fffffffu;
  const uint32_t nan = 0x7e00u | ((u >> 13) & 0x03ffu);  // quiet, truncated
  // Subnormal or zero: adding a magic number aligns the 10 mantissa bits at
  // the bottom, and the float addition rounds to nearest even.
  const uint32_t magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  const uint32_t small = float_bits(bits_float(u) + bits_float(magic)) - magic;
  // Normal: rebias the exponent, round to nearest even on the dropped bits.
  const uint32_t normal =
      (u + ((uint32_t)(15 - 127) << 23) + 0xfffu + ((u >> 13) & 1u)) >> 13;
  const uint32_t o = u > 0x7f800000u             ? nan
                     : u >= ((127u + 16u) << 23) ? 0x7c00u
                     : u < (113u << 23)          ? small
                                                 : normal;
  return (uint16_t)(o | sign);
}

// bfloat16 -> float (exact).
static inline float bfloat16_to_float(uint16_t b) {
  return bits_float((uint32_t)b << 16);
}

// float -> bfloat16, round to nearest even; NaNs stay NaN (made quiet).
static inline uint16_t float_to_bfloat16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace hvd
