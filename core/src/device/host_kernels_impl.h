// The host kernels, written once and compiled once per instruction set by
// host_kernels_<variant>.cc, which defines HVD_KERNEL_NS (the variant's
// namespace) and, where F16C may be used, HVD_KERNEL_F16C.
//
// The loops are plain loops over restrict pointers so the compiler
// vectorises them; the three aliasing cases the ABI allows (dst == a,
// dst == b, no overlap) each get their own loop. Nothing from the standard
// library is called inside a kernel: an inline library function compiled
// with AVX2 here could otherwise be merged into the baseline variant.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "device/half.h"
#include "device/host_kernels.h"

#if defined(HVD_KERNEL_F16C)
#include <immintrin.h>
#endif

namespace hvd::HVD_KERNEL_NS {
namespace {

// ---- element operations -------------------------------------------------

// Integer arithmetic wraps (computed unsigned, as two's complement).
template <typename T>
using Wide = std::conditional_t<(sizeof(T) > 4), uint64_t, uint32_t>;

template <typename T>
struct Sum {
  using type = T;
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return (T)((Wide<T>)a + (Wide<T>)b);
    } else {
      return a + b;
    }
  }
};

template <typename T>
struct Product {
  using type = T;
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return (T)((Wide<T>)a * (Wide<T>)b);
    } else {
      return a * b;
    }
  }
};

template <typename T>
struct Min {
  using type = T;
  static T apply(T a, T b) { return b < a ? b : a; }
};

template <typename T>
struct Max {
  using type = T;
  static T apply(T a, T b) { return a < b ? b : a; }
};

// bool is one byte, 0 or 1 on output; any nonzero input counts as true.
struct LogicalOr {
  using type = uint8_t;
  static uint8_t apply(uint8_t a, uint8_t b) { return (uint8_t)((a | b) != 0); }
};

struct LogicalAnd {
  using type = uint8_t;
  static uint8_t apply(uint8_t a, uint8_t b) {
    return (uint8_t)((a != 0) & (b != 0));
  }
};

// 16-bit floats: computed in float, rounded to nearest even. Rounding a
// float result of one operation on two halves (or bfloat16s) to the narrow
// format gives the correctly rounded narrow result (float has more than
// twice the precision plus two bits), so this equals native arithmetic.
template <template <typename> class FloatOp>
struct Half {
  using type = uint16_t;
  using float_op = FloatOp<float>;
  static uint16_t apply(uint16_t a, uint16_t b) {
    return float_to_half(float_op::apply(half_to_float(a), half_to_float(b)));
  }
};

template <template <typename> class FloatOp>
struct BFloat16 {
  using type = uint16_t;
  static uint16_t apply(uint16_t a, uint16_t b) {
    return float_to_bfloat16(
        FloatOp<float>::apply(bfloat16_to_float(a), bfloat16_to_float(b)));
  }
};

template <typename Op>
struct IsHalf : std::false_type {};
template <template <typename> class F>
struct IsHalf<Half<F>> : std::true_type {};

#if defined(HVD_KERNEL_F16C)
// Eight halves at a time; the vector op picks operands exactly as the
// scalar op does (minps/maxps return their second operand on ties and NaN).
template <typename FloatOp>
__m256 vector_op(__m256 a, __m256 b) {
  if constexpr (std::is_same_v<FloatOp, Sum<float>>) return _mm256_add_ps(a, b);
  if constexpr (std::is_same_v<FloatOp, Product<float>>)
    return _mm256_mul_ps(a, b);
  if constexpr (std::is_same_v<FloatOp, Min<float>>) return _mm256_min_ps(b, a);
  if constexpr (std::is_same_v<FloatOp, Max<float>>) return _mm256_max_ps(b, a);
}

inline __m256 load_half8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));
}

inline void store_half8(uint16_t* p, __m256 v) {
  _mm_storeu_si128((__m128i*)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

// Returns how many leading elements were done; the caller does the rest.
template <typename Op>
size_t half_vector_prefix(uint16_t* d, const uint16_t* x, const uint16_t* y,
                          size_t n) {
  using F = typename Op::float_op;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    store_half8(d + i, vector_op<F>(load_half8(x + i), load_half8(y + i)));
  }
  return i;
}
#endif

// ---- loops ----------------------------------------------------------------

template <typename Op, typename T = typename Op::type>
void loop_distinct(T* __restrict d, const T* __restrict x,
                   const T* __restrict y, size_t n) {
  for (size_t i = 0; i < n; ++i) d[i] = Op::apply(x[i], y[i]);
}

template <typename Op, typename T = typename Op::type>
void loop_into_a(T* __restrict d, const T* __restrict y, size_t n) {
  for (size_t i = 0; i < n; ++i) d[i] = Op::apply(d[i], y[i]);
}

template <typename Op, typename T = typename Op::type>
void loop_into_b(const T* __restrict x, T* __restrict d, size_t n) {
  for (size_t i = 0; i < n; ++i) d[i] = Op::apply(x[i], d[i]);
}

template <typename Op, typename T = typename Op::type>
void loop_overlapping(T* d, const T* x, const T* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const T a = x[i];
    const T b = y[i];
    d[i] = Op::apply(a, b);
  }
}

template <typename T>
bool overlap(const T* p, const T* q, size_t n) {
  const uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
  const uintptr_t bytes = n * sizeof(T);
  return a < b + bytes && b < a + bytes;
}

template <typename Op>
void reduce_kernel(void* dst, const void* a, const void* b, size_t n) {
  using T = typename Op::type;
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  if (d == x && d == y) {
    loop_overlapping<Op>(d, x, y, n);
    return;
  }
  if ((d != x && overlap(d, x, n)) || (d != y && overlap(d, y, n))) {
    loop_overlapping<Op>(d, x, y, n);
    return;
  }
#if defined(HVD_KERNEL_F16C)
  if constexpr (IsHalf<Op>::value) {
    const size_t done = half_vector_prefix<Op>(d, x, y, n);
    d += done;
    x += done;
    y += done;
    n -= done;
  }
#endif
  if (d == x) {
    loop_into_a<Op>(d, y, n);
  } else if (d == y) {
    loop_into_b<Op>(x, d, n);
  } else {
    loop_distinct<Op>(d, x, y, n);
  }
}

// ---- scaling --------------------------------------------------------------

// Integers: scaled in double and converted back as Horovod (and torch) do
// on x86-64: truncated toward zero to 64 bits, then wrapped to the width
// (a negative factor on uint8 gives 256 - k, not 0). NaN and values beyond
// the int64 range become INT64_MIN first, as the hardware conversion does.
template <typename T>
void scale_integer(void* buf, size_t n, double factor) {
  constexpr double two_63 = 9223372036854775808.0;
  T* __restrict p = static_cast<T*>(buf);
  for (size_t i = 0; i < n; ++i) {
    const double v = (double)p[i] * factor;
    const bool fits = v >= -two_63 && v < two_63;  // false for NaN
    const int64_t whole =
        fits ? (int64_t)v : std::numeric_limits<int64_t>::min();
    p[i] = (T)(uint64_t)whole;
  }
}

void scale_bool(void* buf, size_t n, double factor) {
  uint8_t* __restrict p = static_cast<uint8_t*>(buf);
  const uint8_t keep = factor != 0.0;
  for (size_t i = 0; i < n; ++i) p[i] = (uint8_t)((p[i] != 0) & keep);
}

// float32 is scaled in float32 by the factor rounded to float, as Horovod
// does on the CPU (not in double: the two differ in the last bit).
void scale_float(void* buf, size_t n, double factor) {
  float* __restrict p = static_cast<float*>(buf);
  const float f = (float)factor;
  for (size_t i = 0; i < n; ++i) p[i] = p[i] * f;
}

void scale_double(void* buf, size_t n, double factor) {
  double* __restrict p = static_cast<double*>(buf);
  for (size_t i = 0; i < n; ++i) p[i] *= factor;
}

void scale_half(void* buf, size_t n, double factor) {
  uint16_t* __restrict p = static_cast<uint16_t*>(buf);
  const float f = (float)factor;
  size_t i = 0;
#if defined(HVD_KERNEL_F16C)
  const __m256 vf = _mm256_set1_ps(f);
  for (; i + 8 <= n; i += 8)
    store_half8(p + i, _mm256_mul_ps(load_half8(p + i), vf));
#endif
  for (; i < n; ++i) p[i] = float_to_half(half_to_float(p[i]) * f);
}

void scale_bfloat16(void* buf, size_t n, double factor) {
  uint16_t* __restrict p = static_cast<uint16_t*>(buf);
  const float f = (float)factor;
  for (size_t i = 0; i < n; ++i) {
    p[i] = float_to_bfloat16(bfloat16_to_float(p[i]) * f);
  }
}

// ---- the table --------------------------------------------------------------

template <typename T>
constexpr void set_arithmetic(HostKernels& k, hvd_dtype dtype) {
  k.reduce[dtype][kKernelSum] = reduce_kernel<Sum<T>>;
  k.reduce[dtype][kKernelMin] = reduce_kernel<Min<T>>;
  k.reduce[dtype][kKernelMax] = reduce_kernel<Max<T>>;
  k.reduce[dtype][kKernelProduct] = reduce_kernel<Product<T>>;
}

template <typename T>
constexpr void set_integer(HostKernels& k, hvd_dtype dtype) {
  set_arithmetic<T>(k, dtype);
  k.scale[dtype] = scale_integer<T>;
}

constexpr HostKernels make_table(const char* name) {
  HostKernels k{};
  k.name = name;
  set_integer<uint8_t>(k, HVD_UINT8);
  set_integer<int8_t>(k, HVD_INT8);
  set_integer<uint16_t>(k, HVD_UINT16);
  set_integer<int16_t>(k, HVD_INT16);
  set_integer<int32_t>(k, HVD_INT32);
  set_integer<int64_t>(k, HVD_INT64);
  set_arithmetic<float>(k, HVD_FLOAT32);
  k.scale[HVD_FLOAT32] = scale_float;
  set_arithmetic<double>(k, HVD_FLOAT64);
  k.scale[HVD_FLOAT64] = scale_double;
  k.reduce[HVD_FLOAT16][kKernelSum] = reduce_kernel<Half<Sum>>;
  k.reduce[HVD_FLOAT16][kKernelMin] = reduce_kernel<Half<Min>>;
  k.reduce[HVD_FLOAT16][kKernelMax] = reduce_kernel<Half<Max>>;
  k.reduce[HVD_FLOAT16][kKernelProduct] = reduce_kernel<Half<Product>>;
  k.scale[HVD_FLOAT16] = scale_half;
  k.reduce[HVD_BFLOAT16][kKernelSum] = reduce_kernel<BFloat16<Sum>>;
  k.reduce[HVD_BFLOAT16][kKernelMin] = reduce_kernel<BFloat16<Min>>;
  k.reduce[HVD_BFLOAT16][kKernelMax] = reduce_kernel<BFloat16<Max>>;
  k.reduce[HVD_BFLOAT16][kKernelProduct] = reduce_kernel<BFloat16<Product>>;
  k.scale[HVD_BFLOAT16] = scale_bfloat16;
  k.reduce[HVD_BOOL][kKernelSum] = reduce_kernel<LogicalOr>;
  k.reduce[HVD_BOOL][kKernelMin] = reduce_kernel<LogicalAnd>;
  k.reduce[HVD_BOOL][kKernelMax] = reduce_kernel<LogicalOr>;
  k.reduce[HVD_BOOL][kKernelProduct] = reduce_kernel<LogicalAnd>;
  k.scale[HVD_BOOL] = scale_bool;
  return k;
}

}  // namespace
}  // namespace hvd::HVD_KERNEL_NS
