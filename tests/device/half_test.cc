// float16 and bfloat16 conversions: exact widening, round-to-nearest-even
// narrowing at every tie, NaN and infinity, and agreement with F16C.
#include "device/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "device/device.h"
#include "reference.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hvd::test {
namespace {

bool same_value(double expected, float actual) {
  if (std::isnan(expected)) return std::isnan(actual);
  return expected == (double)actual &&
         std::signbit(expected) == std::signbit(actual);
}

// Floats that exercise rounding into a format whose values `decode` lists:
// every midpoint between neighbours, one float either side of it, and a
// spread of random floats.
template <typename Decode>
std::vector<float> rounding_cases(Decode decode) {
  std::vector<float> out;
  for (uint32_t bits = 0; bits < 0x7fff; ++bits) {
    const double lo = decode((uint16_t)bits), hi = decode((uint16_t)(bits + 1));
    if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
    const float mid = (float)((lo + hi) / 2);  // exact: few significand bits
    for (float f :
         {mid, std::nextafter(mid, -INFINITY), std::nextafter(mid, INFINITY)}) {
      out.push_back(f);
      out.push_back(-f);
    }
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 1 << 20; ++i) out.push_back(bits_float((uint32_t)rng()));
  for (float f : {INFINITY, -INFINITY, NAN, -NAN, 0.0f, -0.0f, 65504.0f,
                  65519.99f, 65520.0f, 1e-8f, 3e38f, 3.4028235e38f}) {
    out.push_back(f);
  }
  return out;
}

TEST(Half, WideningIsExactForEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float((uint16_t)h);
    ASSERT_TRUE(same_value(half_value((uint16_t)h), f)) << std::hex << h;
    if (std::isnan(f)) {
      EXPECT_TRUE(float_bits(f) & 0x00400000u) << "NaN made quiet: " << h;
    }
  }
}

TEST(Half, NarrowingRoundsToNearestEven) {
  for (float f : rounding_cases(half_value)) {
    const uint16_t h = float_to_half(f);
    ASSERT_TRUE(same_value(round_to_format(f, kHalfFormat), half_to_float(h)))
        << "float bits " << std::hex << float_bits(f) << " -> " << h;
  }
  EXPECT_EQ(float_to_half(2049.0f), float_to_half(2048.0f));  // tie: even
  EXPECT_EQ(float_to_half(2051.0f), float_to_half(2052.0f));
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // rounds past the largest
  EXPECT_EQ(float_to_half(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // tie to zero
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
}

TEST(BFloat16, WideningIsExactForEveryValue) {
  for (uint32_t b = 0; b < 65536; ++b) {
    ASSERT_TRUE(
        same_value(bfloat16_value((uint16_t)b), bfloat16_to_float((uint16_t)b)))
        << std::hex << b;
  }
}

TEST(BFloat16, NarrowingRoundsToNearestEven) {
  for (float f : rounding_cases(bfloat16_value)) {
    const uint16_t b = float_to_bfloat16(f);
    ASSERT_TRUE(
        same_value(round_to_format(f, kBFloat16Format), bfloat16_to_float(b)))
        << "float bits " << std::hex << float_bits(f) << " -> " << b;
    if (std::isnan(f)) {
      EXPECT_TRUE(b & 0x0040) << "NaN made quiet";
    }
  }
  EXPECT_EQ(float_to_bfloat16(257.0f), float_to_bfloat16(256.0f));  // even
  EXPECT_EQ(float_to_bfloat16(259.0f), float_to_bfloat16(260.0f));
  EXPECT_EQ(float_to_bfloat16(3.4028235e38f), 0x7f80);  // to infinity
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t f16c_narrow(float f) {
  return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}
__attribute__((target("f16c"))) float f16c_widen(uint16_t h) {
  return _cvtsh_ss(h);
}

TEST(Half, PortableConversionsMatchF16CBitForBit) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no F16C here";
  for (uint32_t h = 0; h < 65536; ++h) {
    ASSERT_EQ(float_bits(half_to_float((uint16_t)h)),
              float_bits(f16c_widen((uint16_t)h)))
        << std::hex << h;
  }
  for (float f : rounding_cases(half_value)) {
    ASSERT_EQ(float_to_half(f), f16c_narrow(f))
        << "float bits " << std::hex << float_bits(f);
  }
}
#endif

TEST(Half, KernelSumRoundsTiesToEven) {
  const uint16_t a[] = {float_to_half(2048), float_to_half(2050),
                        float_to_half(65504), float_to_half(-1)};
  const uint16_t b[] = {float_to_half(1), float_to_half(1), float_to_half(8),
                        float_to_half(1)};
  uint16_t out[4];
  reduce_host(HVD_FLOAT16, HVD_OP_SUM, out, a, b, 4);
  EXPECT_EQ(half_to_float(out[0]), 2048.0f);
  EXPECT_EQ(half_to_float(out[1]), 2052.0f);
  EXPECT_EQ(half_to_float(out[2]), 65504.0f);  // below the tie with 65536
  EXPECT_EQ(out[3], 0x0000);                   // -1 + 1 = +0
}

TEST(BFloat16, KernelSumRoundsTiesToEven) {
  const uint16_t a[] = {float_to_bfloat16(256), float_to_bfloat16(258)};
  const uint16_t b[] = {float_to_bfloat16(1), float_to_bfloat16(1)};
  uint16_t out[2];
  reduce_host(HVD_BFLOAT16, HVD_OP_SUM, out, a, b, 2);
  EXPECT_EQ(bfloat16_to_float(out[0]), 256.0f);
  EXPECT_EQ(bfloat16_to_float(out[1]), 260.0f);
}

}  // namespace
}  // namespace hvd::test
