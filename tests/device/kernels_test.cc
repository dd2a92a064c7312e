// Every dtype x op x count of the host reduction kernels against an
// independent reference, for every kernel variant this CPU runs, in every
// aliasing arrangement the ABI allows; the variants must agree bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "device/device.h"
#include "device/host_kernels.h"
#include "reference.h"

namespace hvd::test {
namespace {

const size_t kCounts[] = {0, 1, 7, 1023, (size_t(1) << 20) + 3};
const hvd_reduce_op kOps[] = {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX,
                              HVD_OP_PRODUCT};

std::vector<const HostKernels*> variants() {
  std::vector<const HostKernels*> out{&host_kernels_generic()};
#if defined(HVD_HAVE_AVX2_KERNELS)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) {
    out.push_back(&host_kernels_avx2());
  }
#endif
  return out;
}

int kernel_index(hvd_reduce_op op) {
  switch (op) {
    case HVD_OP_SUM:
      return kKernelSum;
    case HVD_OP_MIN:
      return kKernelMin;
    case HVD_OP_MAX:
      return kKernelMax;
    default:
      return kKernelProduct;
  }
}

template <typename T>
T integer_op(hvd_reduce_op op, T x, T y) {
  const uint64_t ux = (uint64_t)(int64_t)x, uy = (uint64_t)(int64_t)y;
  switch (op) {
    case HVD_OP_SUM:
      return (T)(ux + uy);
    case HVD_OP_PRODUCT:
      return (T)(ux * uy);
    case HVD_OP_MIN:
      return y < x ? y : x;
    default:
      return x < y ? y : x;
  }
}

double real_op(hvd_reduce_op op, double x, double y) {
  switch (op) {
    case HVD_OP_SUM:
      return x + y;
    case HVD_OP_PRODUCT:
      return x * y;
    case HVD_OP_MIN:
      return y < x ? y : x;
    default:
      return x < y ? y : x;
  }
}

// Same value, or both NaN; zeros must agree in sign.
bool same_real(double expected, double actual) {
  if (std::isnan(expected)) return std::isnan(actual);
  return expected == actual && std::signbit(expected) == std::signbit(actual);
}

template <typename T>
T load(const uint8_t* p, size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}

// Index of the first element where `out` differs from the reference of
// a op b, or SIZE_MAX.
size_t first_mismatch(hvd_dtype dtype, hvd_reduce_op op, const uint8_t* a,
                      const uint8_t* b, const uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    bool ok = true;
    switch (dtype) {
#define HVD_INTEGER_CASE(code, T)                                            \
  case code:                                                                 \
    ok = load<T>(out, i) == integer_op<T>(op, load<T>(a, i), load<T>(b, i)); \
    break;
      HVD_INTEGER_CASE(HVD_UINT8, uint8_t)
      HVD_INTEGER_CASE(HVD_INT8, int8_t)
      HVD_INTEGER_CASE(HVD_UINT16, uint16_t)
      HVD_INTEGER_CASE(HVD_INT16, int16_t)
      HVD_INTEGER_CASE(HVD_INT32, int32_t)
      HVD_INTEGER_CASE(HVD_INT64, int64_t)
#undef HVD_INTEGER_CASE
      case HVD_BOOL: {
        const bool x = a[i] != 0, y = b[i] != 0;
        const bool either = op == HVD_OP_SUM || op == HVD_OP_MAX;
        ok = out[i] == (either ? (x || y) : (x && y));
        break;
      }
      case HVD_FLOAT32:
        ok = same_real((float)real_op(op, load<float>(a, i), load<float>(b, i)),
                       load<float>(out, i));
        break;
      case HVD_FLOAT64:
        ok = same_real(real_op(op, load<double>(a, i), load<double>(b, i)),
                       load<double>(out, i));
        break;
      case HVD_FLOAT16:
        ok = same_real(
            round_to_format(real_op(op, half_value(load<uint16_t>(a, i)),
                                    half_value(load<uint16_t>(b, i))),
                            kHalfFormat),
            half_value(load<uint16_t>(out, i)));
        break;
      case HVD_BFLOAT16:
        ok = same_real(
            round_to_format(real_op(op, bfloat16_value(load<uint16_t>(a, i)),
                                    bfloat16_value(load<uint16_t>(b, i))),
                            kBFloat16Format),
            bfloat16_value(load<uint16_t>(out, i)));
        break;
    }
    if (!ok) return i;
  }
  return SIZE_MAX;
}

bool is_nan(hvd_dtype dtype, const uint8_t* p, size_t i) {
  switch (dtype) {
    case HVD_FLOAT16:
      return std::isnan(half_value(load<uint16_t>(p, i)));
    case HVD_BFLOAT16:
      return std::isnan(bfloat16_value(load<uint16_t>(p, i)));
    case HVD_FLOAT32:
      return std::isnan(load<float>(p, i));
    case HVD_FLOAT64:
      return std::isnan(load<double>(p, i));
  }
  return false;
}

// Variants must agree bit for bit, except for which NaN payload survives
// when both operands are NaN: the compiler may swap the operands of a
// commutative operation. Returns the first index where they disagree.
size_t first_difference(hvd_dtype dtype, const uint8_t* a, const uint8_t* b,
                        const uint8_t* x, const uint8_t* y, size_t n) {
  const size_t esize = dtype_size(dtype);
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(x + i * esize, y + i * esize, esize) == 0) continue;
    if (is_nan(dtype, a, i) && is_nan(dtype, b, i)) continue;
    return i;
  }
  return SIZE_MAX;
}

std::vector<uint8_t> random_elements(hvd_dtype dtype, size_t n,
                                     std::mt19937_64& rng) {
  std::vector<uint8_t> v(n * dtype_size(dtype));
  for (auto& byte : v) byte = (uint8_t)rng();
  if (dtype == HVD_BOOL) {
    const uint8_t values[] = {0, 1, 2, 255};
    for (auto& byte : v) byte = values[byte & 3];
  }
  return v;
}

class KernelTest
    : public ::testing::TestWithParam<std::tuple<hvd_dtype, hvd_reduce_op>> {};

TEST_P(KernelTest, MatchesReferenceInEveryLayout) {
  const auto [dtype, op] = GetParam();
  const size_t esize = dtype_size(dtype);
  std::mt19937_64 rng(dtype * 131 + op);
  for (size_t count : kCounts) {
    // One spare element in front lets the distinct case run unaligned.
    const std::vector<uint8_t> a = random_elements(dtype, count + 1, rng);
    const std::vector<uint8_t> b = random_elements(dtype, count + 1, rng);
    std::vector<uint8_t> first_result;
    for (const HostKernels* k : variants()) {
      const ReduceKernel kernel = k->reduce[dtype][kernel_index(op)];
      const std::string where = std::string(k->name) + " " + dtype_name(dtype) +
                                " " + op_name(op) + " count " +
                                std::to_string(count);
      // Distinct buffers, misaligned by one element.
      std::vector<uint8_t> out(a.size(), 0xAB);
      kernel(out.data() + esize, a.data() + esize, b.data() + esize, count);
      ASSERT_EQ(first_mismatch(dtype, op, a.data() + esize, b.data() + esize,
                               out.data() + esize, count),
                SIZE_MAX)
          << where << " (distinct)";
      ASSERT_EQ(std::vector<uint8_t>(out.begin(), out.begin() + esize),
                std::vector<uint8_t>(esize, 0xAB))
          << where << ": wrote before dst";
      // dst == a and dst == b, misaligned the same way.
      std::vector<uint8_t> into_a = a;
      kernel(into_a.data() + esize, into_a.data() + esize, b.data() + esize,
             count);
      std::vector<uint8_t> into_b = b;
      kernel(into_b.data() + esize, a.data() + esize, into_b.data() + esize,
             count);
      const std::vector<uint8_t> expected(out.begin() + esize, out.end());
      EXPECT_EQ(std::vector<uint8_t>(into_a.begin() + esize, into_a.end()),
                expected)
          << where << " (dst == a)";
      EXPECT_EQ(std::vector<uint8_t>(into_b.begin() + esize, into_b.end()),
                expected)
          << where << " (dst == b)";
      if (first_result.empty()) {
        first_result = expected;
      } else {
        EXPECT_EQ(first_difference(dtype, a.data() + esize, b.data() + esize,
                                   expected.data(), first_result.data(), count),
                  SIZE_MAX)
            << where << ": variants differ bit for bit";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllDtypesAndOps, KernelTest,
    ::testing::Combine(::testing::Range<hvd_dtype>(0, HVD_DTYPE_COUNT),
                       ::testing::ValuesIn(kOps)),
    [](const auto& info) {
      return std::string(dtype_name(std::get<0>(info.param))) + "_" +
             op_name(std::get<1>(info.param));
    });

TEST(ReduceHost, SelfReductionAndOverlapAreFrontToBack) {
  std::vector<int32_t> v = {1, 2, 3, 4, 5};
  reduce_host(HVD_INT32, HVD_OP_SUM, v.data(), v.data(), v.data(), v.size());
  EXPECT_EQ(v, (std::vector<int32_t>{2, 4, 6, 8, 10}));
  // dst one element behind a: each element sees the original next one.
  std::vector<int32_t> w = {1, 2, 3, 4, 5, 0};
  std::vector<int32_t> ones(5, 1);
  reduce_host(HVD_INT32, HVD_OP_SUM, w.data(), w.data() + 1, ones.data(), 5);
  EXPECT_EQ(w, (std::vector<int32_t>{3, 4, 5, 6, 1, 0}));
}

TEST(ReduceHost, RejectsOpsThatAreNotKernels) {
  float x = 1, y = 2;
  for (hvd_reduce_op op : {(hvd_reduce_op)HVD_OP_AVERAGE,
                           (hvd_reduce_op)HVD_OP_ADASUM, (hvd_reduce_op)42}) {
    try {
      reduce_host(HVD_FLOAT32, op, &x, &x, &y, 1);
      ADD_FAILURE() << "op " << op << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), HVD_ERR_INVALID_ARGUMENT);
    }
  }
  try {
    reduce_host(HVD_DTYPE_COUNT, HVD_OP_SUM, &x, &x, &y, 1);
    ADD_FAILURE() << "unknown dtype accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HVD_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("dtype"), std::string::npos);
  }
}

TEST(DtypeNames, EveryDtypeHasASizeAndName) {
  for (hvd_dtype d = 0; d < HVD_DTYPE_COUNT; ++d) {
    EXPECT_GT(dtype_size(d), 0u) << d;
    EXPECT_STRNE(dtype_name(d), "unknown dtype") << d;
  }
  EXPECT_EQ(dtype_size(HVD_BFLOAT16), 2u);
  EXPECT_STREQ(dtype_name(HVD_BFLOAT16), "bfloat16");
  EXPECT_STREQ(op_name(HVD_OP_PRODUCT), "PRODUCT");
  EXPECT_EQ(dtype_size(HVD_DTYPE_COUNT), 0u);
}

}  // namespace
}  // namespace hvd::test
