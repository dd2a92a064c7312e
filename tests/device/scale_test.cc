// Prescale/postscale kernels per dtype, as Horovod scales on the CPU:
// precision, rounding, integer truncation and wrapping, agreement between
// kernel variants.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "device/device.h"
#include "device/half.h"
#include "device/host_kernels.h"
#include "reference.h"

namespace hvd::test {
namespace {

const size_t kCounts[] = {0, 1, 7, 1023, (size_t(1) << 20) + 3};
const double kFactors[] = {0.5, 3.0, -1.5, 1.0 / 3.0};

template <typename T>
std::vector<T> scaled(hvd_dtype dtype, std::vector<T> v, double factor) {
  scale_host(dtype, v.data(), v.size(), factor);
  return v;
}

TEST(Scale, FloatsMatchTheReference) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1e4f, 1e4f);
  for (size_t count : kCounts) {
    std::vector<float> f32(count);
    std::vector<double> f64(count);
    std::vector<uint16_t> f16(count), bf16(count);
    for (size_t i = 0; i < count; ++i) {
      f32[i] = dist(rng);
      f64[i] = (double)dist(rng) * 1.000001;
      f16[i] = float_to_half(dist(rng));
      bf16[i] = float_to_bfloat16(dist(rng));
    }
    for (double factor : kFactors) {
      const auto s32 = scaled(HVD_FLOAT32, f32, factor);
      const auto s64 = scaled(HVD_FLOAT64, f64, factor);
      const auto s16 = scaled(HVD_FLOAT16, f16, factor);
      const auto sb16 = scaled(HVD_BFLOAT16, bf16, factor);
      const double ff = (float)factor;  // 16-bit floats scale in float
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(s32[i], f32[i] * (float)factor) << i;
        ASSERT_EQ(s64[i], f64[i] * factor) << i;
        ASSERT_EQ((double)half_to_float(s16[i]),
                  round_to_format(half_value(f16[i]) * ff, kHalfFormat))
            << i;
        ASSERT_EQ(
            (double)bfloat16_to_float(sb16[i]),
            round_to_format(bfloat16_value(bf16[i]) * ff, kBFloat16Format))
            << i;
      }
    }
  }
}

// Scaled in double, then converted as a C++ cast does on x86-64 (and torch's
// to(dtype)): truncated toward zero, wrapped to the width.
TEST(Scale, IntegersTruncateTowardZeroAndWrap) {
  EXPECT_EQ(scaled<int8_t>(HVD_INT8, {100, -100, 7, -7}, 3.0),
            (std::vector<int8_t>{44, -44, 21, -21}));
  EXPECT_EQ(scaled<int32_t>(HVD_INT32, {7, -7, 1, 0}, 0.5),
            (std::vector<int32_t>{3, -3, 0, 0}));
  // A negative factor on uint8 wraps: -300 is 212, -4.5 is -4, 252.
  EXPECT_EQ(scaled<uint8_t>(HVD_UINT8, {200, 3}, -1.5),
            (std::vector<uint8_t>{212, 252}));
  EXPECT_EQ(scaled<uint16_t>(HVD_UINT16, {40000, 3}, 2.0),
            (std::vector<uint16_t>{14464, 6}));
  EXPECT_EQ(scaled<int16_t>(HVD_INT16, {-20000}, 2.0),
            (std::vector<int16_t>{25536}));
  // Beyond int64 (and NaN): INT64_MIN, as the hardware conversion gives.
  const int64_t big = std::numeric_limits<int64_t>::max() / 2 + 1;
  EXPECT_EQ(scaled<int64_t>(HVD_INT64, {big, -big, 5}, 4.0),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::min(), 20}));
  EXPECT_EQ(scaled<int64_t>(HVD_INT64, {5}, NAN),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min()}));
  // Factor 1 leaves values a double cannot hold untouched.
  const int64_t odd = (int64_t(1) << 60) + 1;
  EXPECT_EQ(scaled<int64_t>(HVD_INT64, {odd}, 1.0),
            (std::vector<int64_t>{odd}));
}

TEST(Scale, BoolKeepsTruthOnlyForNonzeroFactors) {
  EXPECT_EQ(scaled<uint8_t>(HVD_BOOL, {0, 1, 2}, 0.5),
            (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(scaled<uint8_t>(HVD_BOOL, {0, 1, 2}, 0.0),
            (std::vector<uint8_t>{0, 0, 0}));
}

TEST(Scale, VariantsAgreeBitForBit) {
#if defined(HVD_HAVE_AVX2_KERNELS)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c")) {
    GTEST_SKIP() << "one kernel variant only";
  }
  std::mt19937_64 rng(11);
  const size_t count = 4099;
  for (hvd_dtype dtype = 0; dtype < HVD_DTYPE_COUNT; ++dtype) {
    std::vector<uint8_t> data(count * dtype_size(dtype));
    for (auto& byte : data) byte = (uint8_t)rng();
    for (double factor : kFactors) {
      std::vector<uint8_t> a = data, b = data;
      host_kernels_generic().scale[dtype](a.data(), count, factor);
      host_kernels_avx2().scale[dtype](b.data(), count, factor);
      EXPECT_EQ(a, b) << dtype_name(dtype) << " x " << factor;
    }
  }
#else
  GTEST_SKIP() << "one kernel variant only";
#endif
}

}  // namespace
}  // namespace hvd::test
