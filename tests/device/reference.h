// Reference arithmetic for the device tests, written independently of the
// kernels: values computed in double (exact for the inputs the tests use)
// and rounded to the target format with nearbyint.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "horovod/abi.h"

namespace hvd::test {

struct FloatFormat {
  int precision;  // significand bits, the implicit one included
  int emin;       // exponent of the smallest normal
  int emax;       // exponent of the largest finite
};
constexpr FloatFormat kHalfFormat{11, -14, 15};
constexpr FloatFormat kBFloat16Format{8, -126, 127};

// x rounded to nearest even in `format` (infinity past the largest finite).
inline double round_to_format(double x, FloatFormat format) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = std::ilogb(x);
  if (e < format.emin) e = format.emin;
  const double quantum = std::ldexp(1.0, e - format.precision + 1);
  const double r = std::nearbyint(x / quantum) * quantum;
  const double max_finite = (2.0 - std::ldexp(1.0, 1 - format.precision)) *
                            std::ldexp(1.0, format.emax);
  if (std::fabs(r) > max_finite) return std::copysign(INFINITY, x);
  return r;
}

// The exact value of binary16 / bfloat16 bits, decoded by hand.
inline double half_value(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
  double v;
  if (exp == 31) {
    v = mant != 0 ? NAN : INFINITY;
  } else if (exp == 0) {
    v = std::ldexp((double)mant, -24);
  } else {
    v = std::ldexp(1.0 + mant / 1024.0, exp - 15);
  }
  return sign ? -v : v;
}

inline double bfloat16_value(uint16_t b) {
  const uint32_t u = (uint32_t)b << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

}  // namespace hvd::test
