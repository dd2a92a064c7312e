#include "data.h"

#include <cstring>

#include "device/device.h"
#include "device/half.h"

namespace hvd::test {
namespace {

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

bool is_unsigned(hvd_dtype d) {
  return d == HVD_UINT8 || d == HVD_UINT16 || d == HVD_BOOL;
}

void store(hvd_dtype dtype, uint8_t* p, double v) {
  switch (dtype) {
#define HVD_STORE(code, T)        \
  case code: {                    \
    const T x = (T)v;             \
    std::memcpy(p, &x, sizeof x); \
    break;                        \
  }
    HVD_STORE(HVD_UINT8, uint8_t)
    HVD_STORE(HVD_INT8, int8_t)
    HVD_STORE(HVD_UINT16, uint16_t)
    HVD_STORE(HVD_INT16, int16_t)
    HVD_STORE(HVD_INT32, int32_t)
    HVD_STORE(HVD_INT64, int64_t)
    HVD_STORE(HVD_FLOAT32, float)
    HVD_STORE(HVD_FLOAT64, double)
    HVD_STORE(HVD_BOOL, uint8_t)
#undef HVD_STORE
    case HVD_FLOAT16: {
      const uint16_t h = float_to_half((float)v);
      std::memcpy(p, &h, 2);
      break;
    }
    case HVD_BFLOAT16: {
      const uint16_t b = float_to_bfloat16((float)v);
      std::memcpy(p, &b, 2);
      break;
    }
  }
}

double load(hvd_dtype dtype, const uint8_t* p) {
  switch (dtype) {
#define HVD_LOAD(code, T)         \
  case code: {                    \
    T x;                          \
    std::memcpy(&x, p, sizeof x); \
    return (double)x;             \
  }
    HVD_LOAD(HVD_UINT8, uint8_t)
    HVD_LOAD(HVD_INT8, int8_t)
    HVD_LOAD(HVD_UINT16, uint16_t)
    HVD_LOAD(HVD_INT16, int16_t)
    HVD_LOAD(HVD_INT32, int32_t)
    HVD_LOAD(HVD_INT64, int64_t)
    HVD_LOAD(HVD_FLOAT32, float)
    HVD_LOAD(HVD_FLOAT64, double)
    HVD_LOAD(HVD_BOOL, uint8_t)
#undef HVD_LOAD
    case HVD_FLOAT16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return half_to_float(h);
    }
    case HVD_BFLOAT16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return bfloat16_to_float(b);
    }
  }
  return 0;
}

}  // namespace

Bytes reduction_input(hvd_dtype dtype, hvd_reduce_op op, int32_t rank,
                      size_t count, uint64_t seed) {
  const size_t esize = dtype_size(dtype);
  Bytes out(count * esize);
  const uint64_t base = mix(seed * 7919 + (uint64_t)rank);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t h = mix(base + i);
    double v;
    if (dtype == HVD_BOOL) {
      v = op == HVD_OP_PRODUCT || op == HVD_OP_MIN ? (h % 10 != 0)
                                                   : (h % 4 == 0);
    } else if (op == HVD_OP_SUM) {
      v = is_unsigned(dtype) ? (double)(h % 4) : (double)(h % 7) - 3;
    } else if (op == HVD_OP_PRODUCT) {
      static const double signed_values[] = {1, 2, -1, 1};
      v = is_unsigned(dtype) ? (double)(1 + h % 2) : signed_values[h % 4];
    } else {
      v = is_unsigned(dtype) ? (double)(h % 201) : (double)(h % 201) - 100;
    }
    store(dtype, out.data() + i * esize, v);
  }
  return out;
}

Bytes random_input(hvd_dtype dtype, int32_t rank, size_t count, uint64_t seed) {
  const size_t esize = dtype_size(dtype);
  Bytes out(count * esize);
  const uint64_t base = mix(seed * 104729 + (uint64_t)rank);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t h = mix(base + i);
    if (is_float(dtype)) {
      store(dtype, out.data() + i * esize,
            (double)(h >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
    } else {
      std::memcpy(out.data() + i * esize, &h, esize);
      if (dtype == HVD_BOOL) out[i] &= 1;
    }
  }
  return out;
}

Bytes pattern(size_t bytes, uint64_t seed) {
  Bytes out(bytes);
  uint64_t h = mix(seed);
  for (size_t i = 0; i < bytes; ++i) {
    if (i % 8 == 0) h = mix(h + i);
    out[i] = (uint8_t)(h >> (8 * (i % 8)));
  }
  return out;
}

Bytes reduce_reference(hvd_dtype dtype, hvd_reduce_op op,
                       const std::vector<Bytes>& inputs) {
  Bytes acc = inputs.at(0);
  const size_t count = acc.size() / dtype_size(dtype);
  for (size_t r = 1; r < inputs.size(); ++r) {
    reduce_host(dtype, op, acc.data(), acc.data(), inputs[r].data(), count);
  }
  return acc;
}

void scale(hvd_dtype dtype, Bytes& data, double factor) {
  scale_host(dtype, data.data(), data.size() / dtype_size(dtype), factor);
}

Bytes from_doubles(hvd_dtype dtype, const std::vector<double>& values) {
  const size_t esize = dtype_size(dtype);
  Bytes out(values.size() * esize);
  for (size_t i = 0; i < values.size(); ++i) {
    store(dtype, out.data() + i * esize, values[i]);
  }
  return out;
}

std::vector<double> as_doubles(hvd_dtype dtype, const Bytes& data) {
  const size_t esize = dtype_size(dtype);
  std::vector<double> out(data.size() / esize);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = load(dtype, data.data() + i * esize);
  return out;
}

const std::vector<hvd_dtype>& all_dtypes() {
  static const std::vector<hvd_dtype> v = [] {
    std::vector<hvd_dtype> d;
    for (hvd_dtype t = 0; t < HVD_DTYPE_COUNT; ++t) d.push_back(t);
    return d;
  }();
  return v;
}

const std::vector<hvd_reduce_op>& kernel_ops() {
  static const std::vector<hvd_reduce_op> v = {HVD_OP_SUM, HVD_OP_MIN,
                                               HVD_OP_MAX, HVD_OP_PRODUCT};
  return v;
}

bool is_float(hvd_dtype d) {
  return d == HVD_FLOAT16 || d == HVD_BFLOAT16 || d == HVD_FLOAT32 ||
         d == HVD_FLOAT64;
}

}  // namespace hvd::test
