#include "kernels.h"

#include <cstdint>
#include <cstring>

namespace hvd::reducers::adasum {
namespace {

float half_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu, bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf, nan
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Round to nearest, ties to even.
uint16_t float_to_half(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf, nan
    return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u);
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504
  if (abs < 0x38800000u) {                        // subnormal or zero
    if (abs < 0x33000000u) return sign;
    const uint32_t shift = 126 - (abs >> 23);
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1u))) ++half;
    return sign | (uint16_t)half;
  }
  uint32_t half = ((abs >> 13) - (112u << 10));
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return sign | (uint16_t)half;
}

template <typename T>
struct Value {
  static double load(const T* p, size_t i) { return (double)p[i]; }
  static void store(T* p, size_t i, double v) { p[i] = (T)v; }
};

template <>
struct Value<uint16_t> {
  static double load(const uint16_t* p, size_t i) {
    return (double)half_to_float(p[i]);
  }
  static void store(uint16_t* p, size_t i, double v) {
    p[i] = float_to_half((float)v);
  }
};

template <typename T>
void dot_and_norms_of(const T* a, const T* b, size_t count, double out[3]) {
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < count; ++i) {
    const double x = Value<T>::load(a, i), y = Value<T>::load(b, i);
    dot += x * y;
    aa += x * x;
    bb += y * y;
  }
  out[0] += dot;
  out[1] += aa;
  out[2] += bb;
}

template <typename T>
void scaled_add_of(T* a, double ca, const T* b, double cb, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    Value<T>::store(a, i,
                    ca * Value<T>::load(a, i) + cb * Value<T>::load(b, i));
  }
}

template <typename T>
void scale_of(T* a, double factor, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    Value<T>::store(a, i, factor * Value<T>::load(a, i));
  }
}

}  // namespace

bool has_kernels(hvd_dtype dtype) {
  return dtype == HVD_FLOAT16 || dtype == HVD_FLOAT32 || dtype == HVD_FLOAT64;
}

void dot_and_norms(hvd_dtype dtype, const void* a, const void* b, size_t count,
                   double out[3]) {
  switch (dtype) {
    case HVD_FLOAT16:
      return dot_and_norms_of((const uint16_t*)a, (const uint16_t*)b, count,
                              out);
    case HVD_FLOAT32:
      return dot_and_norms_of((const float*)a, (const float*)b, count, out);
    case HVD_FLOAT64:
      return dot_and_norms_of((const double*)a, (const double*)b, count, out);
    default:
      return;
  }
}

void scaled_add(hvd_dtype dtype, void* a, double ca, const void* b, double cb,
                size_t count) {
  switch (dtype) {
    case HVD_FLOAT16:
      return scaled_add_of((uint16_t*)a, ca, (const uint16_t*)b, cb, count);
    case HVD_FLOAT32:
      return scaled_add_of((float*)a, ca, (const float*)b, cb, count);
    case HVD_FLOAT64:
      return scaled_add_of((double*)a, ca, (const double*)b, cb, count);
    default:
      return;
  }
}

void scale(hvd_dtype dtype, void* a, double factor, size_t count) {
  switch (dtype) {
    case HVD_FLOAT16:
      return scale_of((uint16_t*)a, factor, count);
    case HVD_FLOAT32:
      return scale_of((float*)a, factor, count);
    case HVD_FLOAT64:
      return scale_of((double*)a, factor, count);
    default:
      return;
  }
}

}  // namespace hvd::reducers::adasum
