// Helpers of the multi-process runtime tests: buffers of any dtype, values
// written and read through doubles, and checks that count failures and say
// which rank saw what.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "horovod/horovod.h"
#include "horovod_plugin/enums.h"
#include "tensor_of.h"

namespace mp {

inline int g_failures = 0;

inline void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++g_failures;
  if (g_failures <= 20) {
    std::printf("rank %d: FAIL: %s\n", hvd_rank(), what.c_str());
    std::fflush(stdout);
  }
}

// For a call's status: the message is read after the call returned.
inline void expect_ok(hvd_status s, const std::string& what) {
  if (s != HVD_OK) {
    expect(false, what + ": " + hvd_status_string(s) + ": " + hvd_last_error());
  }
}

using hvd_plugin::dtype_name;
using hvd_plugin::dtype_size;

inline bool is_float(hvd_dtype d) {
  return d == HVD_FLOAT16 || d == HVD_BFLOAT16 || d == HVD_FLOAT32 ||
         d == HVD_FLOAT64;
}
inline bool is_signed(hvd_dtype d) {
  return is_float(d) || d == HVD_INT8 || d == HVD_INT16 || d == HVD_INT32 ||
         d == HVD_INT64;
}

inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;
  return static_cast<uint16_t>(sign | half);
}

inline float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      x = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000 | (mant << 13);
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

inline float bf16_to_float(uint16_t h) {
  uint32_t x = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

inline void store(hvd_dtype d, void* base, size_t i, double v) {
  switch (d) {
    case HVD_UINT8:
      static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v);
      break;
    case HVD_INT8:
      static_cast<int8_t*>(base)[i] = static_cast<int8_t>(v);
      break;
    case HVD_UINT16:
      static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(v);
      break;
    case HVD_INT16:
      static_cast<int16_t*>(base)[i] = static_cast<int16_t>(v);
      break;
    case HVD_INT32:
      static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v);
      break;
    case HVD_INT64:
      static_cast<int64_t*>(base)[i] = static_cast<int64_t>(v);
      break;
    case HVD_FLOAT16:
      static_cast<uint16_t*>(base)[i] = float_to_half(static_cast<float>(v));
      break;
    case HVD_BFLOAT16:
      static_cast<uint16_t*>(base)[i] = float_to_bf16(static_cast<float>(v));
      break;
    case HVD_FLOAT32:
      static_cast<float*>(base)[i] = static_cast<float>(v);
      break;
    case HVD_FLOAT64:
      static_cast<double*>(base)[i] = v;
      break;
    default:
      static_cast<uint8_t*>(base)[i] = v != 0 ? 1 : 0;
      break;
  }
}

inline double load(hvd_dtype d, const void* base, size_t i) {
  switch (d) {
    case HVD_UINT8:
      return static_cast<const uint8_t*>(base)[i];
    case HVD_INT8:
      return static_cast<const int8_t*>(base)[i];
    case HVD_UINT16:
      return static_cast<const uint16_t*>(base)[i];
    case HVD_INT16:
      return static_cast<const int16_t*>(base)[i];
    case HVD_INT32:
      return static_cast<const int32_t*>(base)[i];
    case HVD_INT64:
      return static_cast<double>(static_cast<const int64_t*>(base)[i]);
    case HVD_FLOAT16:
      return half_to_float(static_cast<const uint16_t*>(base)[i]);
    case HVD_BFLOAT16:
      return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    case HVD_FLOAT32:
      return static_cast<const float*>(base)[i];
    case HVD_FLOAT64:
      return static_cast<const double*>(base)[i];
    default:
      return static_cast<const uint8_t*>(base)[i] != 0 ? 1 : 0;
  }
}

// A tensor with its own memory; `desc` points into it.
struct Buffer {
  Buffer() = default;
  Buffer(hvd_dtype d, std::vector<int64_t> s) : dtype(d), shape(std::move(s)) {
    elements = 1;
    for (int64_t n : shape) elements *= static_cast<size_t>(n);
    data.assign(elements * dtype_size(d) + 1, 0);
    describe();
  }
  Buffer(const Buffer& o)
      : dtype(o.dtype), shape(o.shape), elements(o.elements), data(o.data) {
    describe();
  }
  Buffer& operator=(const Buffer& o) {
    dtype = o.dtype;
    shape = o.shape;
    elements = o.elements;
    data = o.data;
    describe();
    return *this;
  }
  void describe() {
    desc = hvd_test::tensor_of(data.data(), dtype, shape.data(),
                               static_cast<int32_t>(shape.size()));
  }
  void set(size_t i, double v) { store(dtype, data.data(), i, v); }
  double get(size_t i) const { return load(dtype, data.data(), i); }

  hvd_dtype dtype = HVD_FLOAT32;
  std::vector<int64_t> shape;
  size_t elements = 0;
  std::vector<uint8_t> data;
  hvd_tensor desc{};
};

// Whether element i of `b` is want(i) for every i (or `same` as it, where
// given); the first that is not is reported under `what`.
inline bool expect_values(
    const Buffer& b, const std::string& what,
    const std::function<double(size_t)>& want,
    const std::function<bool(double got, double want)>& same = nullptr) {
  for (size_t i = 0; i < b.elements; ++i) {
    const double got = b.get(i), wanted = want(i);
    if (same ? !same(got, wanted) : got != wanted) {
      expect(false, what + ": element " + std::to_string(i) + " is " +
                        std::to_string(got) + ", expected " +
                        std::to_string(wanted));
      return false;
    }
  }
  return true;
}

// `name` must outlive the op (a literal, or a string kept by the caller).
inline hvd_op make_op(hvd_collective c, const char* name,
                      const hvd_tensor* inputs, int32_t count,
                      const hvd_tensor* outputs = nullptr) {
  hvd_op op{};
  op.struct_size = sizeof op;
  op.collective = c;
  op.name = name;
  op.tensor_count = count;
  op.inputs = inputs;
  op.outputs = outputs;
  return op;
}
inline hvd_op make_op(hvd_collective c, const std::string& name,
                      const hvd_tensor* inputs, int32_t count,
                      const hvd_tensor* outputs = nullptr) {
  return make_op(c, name.c_str(), inputs, count, outputs);
}
// A temporary's name would dangle.
hvd_op make_op(hvd_collective, std::string&&, const hvd_tensor*, int32_t,
               const hvd_tensor* = nullptr) = delete;

// An op of no tensors and no name: a barrier, a join.
inline hvd_op bare_op(hvd_collective c) {
  return make_op(c, static_cast<const char*>(nullptr), nullptr, 0);
}

// This rank and the world's size, as of the last init_job.
inline int R = 0, N = 1;

// hvd_init with `options` and the configuration file `config` (null: the
// defaults), then R and N; false after printing why it failed.
inline bool init_job(const char* config,
                     hvd_init_options options = hvd_init_options{}) {
  options.struct_size = sizeof options;
  options.config_path = config;
  if (hvd_init(&options) == HVD_OK) {
    R = hvd_rank();
    N = hvd_size();
    return true;
  }
  std::printf("rank ?: FAIL: hvd_init(%s): %s\n", config ? config : "defaults",
              hvd_last_error());
  return false;
}

// Enqueues and waits, reporting a failure under the op's name (a nameless
// op's: its collective's); returns the status. With `out`, the handle goes
// there once enqueued, for the caller to release.
inline hvd_status run_op(const hvd_op& op, hvd_handle** out = nullptr) {
  const std::string what =
      op.name ? op.name : hvd_plugin::collective_name(op.collective);
  hvd_handle* h = nullptr;
  hvd_status s = hvd_enqueue(&op, &h);
  if (s != HVD_OK) {
    expect(false, "enqueue " + what + ": " + hvd_last_error());
    return s;
  }
  s = hvd_wait(h, 120000);
  if (s != HVD_OK) {
    expect(false,
           what + ": " + hvd_status_string(s) + ": " + hvd_handle_message(h));
  }
  if (out) {
    *out = h;
  } else {
    hvd_release(h);
  }
  return s;
}

// Joins, and waits until every rank has: the last rank to join (the join's
// output), or nothing after reporting why not.
inline std::optional<int32_t> join_and_wait() {
  hvd_handle* h = nullptr;
  std::optional<int32_t> last;
  if (run_op(bare_op(HVD_COLL_JOIN), &h) == HVD_OK) {
    hvd_tensor out{};
    if (hvd_handle_output(h, 0, &out) == HVD_OK) {
      last = *static_cast<const int32_t*>(out.data);
    } else {
      expect(false, std::string("join: no output: ") + hvd_last_error());
    }
  }
  if (h) hvd_release(h);
  return last;
}

}  // namespace mp
