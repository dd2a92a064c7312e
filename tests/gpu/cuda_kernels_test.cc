// The CUDA kernels through the device layer (libhorovod-cuda-kernels.so,
// loaded on demand) against the host: the batched copy lands every copy
// (odd sizes, unaligned addresses, zero fills, empty copies) where a host
// copy would; scaling follows Horovod's GPU semantics, computed here
// independently; reductions agree bit for bit with the host kernels.
// Skipped, saying why, without a CUDA device or without the kernels.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/error.h"
#include "device/device.h"
#include "reference.h"

namespace hvd::test {
namespace {

const hvd_device kGpu{HVD_MEM_CUDA, 0};

class CudaKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      GTEST_SKIP() << "no CUDA device";
    }
    const std::string why = fusion_kernels_unavailable(kGpu);
    if (!why.empty()) GTEST_SKIP() << why;
    ASSERT_EQ(api.stream_create(api.ctx, kGpu, &stream), HVD_OK)
        << last_error();
  }
  void TearDown() override {
    for (void* p : buffers_) cudaFree(p);
    if (stream) api.stream_destroy(api.ctx, stream);
  }
  uint8_t* device_bytes(size_t n) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, n > 0 ? n : 1), cudaSuccess);
    buffers_.push_back(p);
    return static_cast<uint8_t*>(p);
  }
  uint8_t* upload(const std::vector<uint8_t>& host) {
    uint8_t* d = device_bytes(host.size());
    EXPECT_EQ(cudaMemcpy(d, host.data(), host.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
    return d;
  }
  std::vector<uint8_t> download(const uint8_t* d, size_t n) {
    EXPECT_EQ(api.stream_synchronize(api.ctx, stream), HVD_OK);
    std::vector<uint8_t> host(n);
    EXPECT_EQ(cudaMemcpy(host.data(), d, n, cudaMemcpyDeviceToHost),
              cudaSuccess);
    return host;
  }
  const hvd_device_api& api = *device_api();
  hvd_stream stream = nullptr;

 private:
  std::vector<void*> buffers_;
};

TEST_F(CudaKernelsTest, BatchedCopyLandsEveryCopy) {
  // More copies than one launch takes; sizes 0, odd, prime, large; source
  // and destination offsets that break every alignment.
  std::mt19937 random(7);
  const size_t arena = 8 << 20;
  std::vector<uint8_t> src(arena), dst(arena, 0xee);
  for (uint8_t& b : src) b = static_cast<uint8_t>(random());
  uint8_t* d_src = upload(src);
  uint8_t* d_dst = upload(dst);
  std::vector<CopyEntry> copies;
  size_t at_src = 0, at_dst = 0;
  const size_t sizes[] = {0, 1, 3, 16, 17, 255, 4099, 65537, 1 << 20};
  for (int i = 0; i < 150; ++i) {
    const size_t n = sizes[i % std::size(sizes)];
    const size_t skew_src = random() % 16, skew_dst = random() % 16;
    if (at_src + skew_src + n > arena || at_dst + skew_dst + n > arena) break;
    const bool zeros = i % 11 == 5;
    copies.push_back({d_dst + at_dst + skew_dst,
                      zeros ? nullptr : d_src + at_src + skew_src, n});
    if (zeros) {
      std::memset(dst.data() + at_dst + skew_dst, 0, n);
    } else {
      std::memcpy(dst.data() + at_dst + skew_dst,
                  src.data() + at_src + skew_src, n);
    }
    at_src += skew_src + n;
    at_dst += skew_dst + n;
  }
  ASSERT_GT(copies.size(), 64u);
  ASSERT_EQ(batched_copy(kGpu, copies, stream), HVD_OK) << last_error();
  EXPECT_EQ(download(d_dst, arena), dst);
}

// Horovod's GPU scaling of one value, computed in double from the exact
// values: 16-bit floats by the factor rounded to their format, the product
// rounded once; float32 by the factor rounded to float; integers in double,
// truncated.
double scaled_on_gpu(hvd_dtype d, double x, double factor) {
  switch (d) {
    case HVD_FLOAT16:
      return round_to_format(x * round_to_format(factor, kHalfFormat),
                             kHalfFormat);
    case HVD_BFLOAT16:
      return round_to_format(x * round_to_format(factor, kBFloat16Format),
                             kBFloat16Format);
    case HVD_FLOAT32:
      return static_cast<float>(x * static_cast<float>(factor));
    case HVD_FLOAT64:
      return x * factor;
    case HVD_BOOL:
      return factor != 0 ? x : 0;
    default:
      return std::trunc(x * factor);
  }
}

double value_of(hvd_dtype d, const uint8_t* p, size_t i) {
  switch (d) {
    case HVD_UINT8:
      return p[i];
    case HVD_INT8:
      return reinterpret_cast<const int8_t*>(p)[i];
    case HVD_UINT16:
      return reinterpret_cast<const uint16_t*>(p)[i];
    case HVD_INT16:
      return reinterpret_cast<const int16_t*>(p)[i];
    case HVD_INT32:
      return reinterpret_cast<const int32_t*>(p)[i];
    case HVD_INT64:
      return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
    case HVD_FLOAT16:
      return half_value(reinterpret_cast<const uint16_t*>(p)[i]);
    case HVD_BFLOAT16:
      return bfloat16_value(reinterpret_cast<const uint16_t*>(p)[i]);
    case HVD_FLOAT32:
      return reinterpret_cast<const float*>(p)[i];
    case HVD_FLOAT64:
      return reinterpret_cast<const double*>(p)[i];
    default:
      return p[i] != 0 ? 1 : 0;
  }
}

// Values that stay in range after scaling by the factors below.
std::vector<uint8_t> values_for(hvd_dtype d, size_t count, unsigned seed = 11) {
  std::vector<uint8_t> out(count * dtype_size(d));
  std::mt19937 random(seed);
  for (size_t i = 0; i < count; ++i) {
    const int small = static_cast<int>(random() % 40);  // 0..39
    const bool signed_int =
        d == HVD_INT8 || d == HVD_INT16 || d == HVD_INT32 || d == HVD_INT64;
    const int v = signed_int ? small - 20 : small;
    switch (d) {
      case HVD_UINT8:
        out[i] = uint8_t(v);
        break;
      case HVD_INT8:
        reinterpret_cast<int8_t*>(out.data())[i] = int8_t(v);
        break;
      case HVD_UINT16:
        reinterpret_cast<uint16_t*>(out.data())[i] = uint16_t(v);
        break;
      case HVD_INT16:
        reinterpret_cast<int16_t*>(out.data())[i] = int16_t(v);
        break;
      case HVD_INT32:
        reinterpret_cast<int32_t*>(out.data())[i] = v;
        break;
      case HVD_INT64:
        reinterpret_cast<int64_t*>(out.data())[i] = v;
        break;
      case HVD_FLOAT16:
        reinterpret_cast<uint16_t*>(out.data())[i] = static_cast<uint16_t>(
            0x3000 + random() % 0x4000);  // 0.125 .. 512, random bits
        break;
      case HVD_BFLOAT16:
        reinterpret_cast<uint16_t*>(out.data())[i] =
            static_cast<uint16_t>(0x3e00 + random() % 0x0800);
        break;
      case HVD_FLOAT32:
        reinterpret_cast<float*>(out.data())[i] = float(random()) / 1e6f - 1000;
        break;
      case HVD_FLOAT64:
        reinterpret_cast<double*>(out.data())[i] =
            double(random()) / 1e6 - 1000;
        break;
      default:
        out[i] = uint8_t(v % 2);
        break;
    }
  }
  return out;
}

const hvd_dtype kAllDtypes[] = {
    HVD_UINT8,   HVD_INT8,     HVD_UINT16,  HVD_INT16,   HVD_INT32, HVD_INT64,
    HVD_FLOAT16, HVD_BFLOAT16, HVD_FLOAT32, HVD_FLOAT64, HVD_BOOL};

TEST_F(CudaKernelsTest, ScaleAsHorovodOnGpu) {
  const size_t count = 100003;  // prime: no vector width divides it
  for (hvd_dtype d : kAllDtypes) {
    for (double factor : {0.5, 3.0, 1.0 / 3.0, 0.1, 0.0}) {
      const bool is_unsigned = d == HVD_UINT8 || d == HVD_UINT16;
      if (is_unsigned && factor < 0) continue;
      std::vector<uint8_t> host = values_for(d, count);
      uint8_t* buf = upload(host);
      ASSERT_EQ(api.scale(api.ctx, kGpu, d, buf, count, factor, stream), HVD_OK)
          << last_error();
      std::vector<uint8_t> got = download(buf, host.size());
      size_t wrong = 0;
      for (size_t i = 0; i < count; ++i) {
        const double want =
            scaled_on_gpu(d, value_of(d, host.data(), i), factor);
        if (value_of(d, got.data(), i) != want && ++wrong <= 3) {
          ADD_FAILURE() << dtype_name(d) << " x " << factor << " at " << i
                        << ": " << value_of(d, host.data(), i) << " gave "
                        << value_of(d, got.data(), i) << ", want " << want;
        }
      }
      EXPECT_EQ(wrong, 0u) << dtype_name(d) << " x " << factor;
    }
  }
}

TEST_F(CudaKernelsTest, ReduceAgreesWithHostKernels) {
  const size_t count = 65537;
  for (hvd_dtype d : kAllDtypes) {
    for (hvd_reduce_op op :
         {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT}) {
      const std::vector<uint8_t> a = values_for(d, count),
                                 b = values_for(d, count, 12);
      std::vector<uint8_t> want(a.size());
      reduce_host(d, op, want.data(), a.data(), b.data(), count);
      uint8_t* da = upload(a);
      uint8_t* db = upload(b);
      ASSERT_EQ(api.reduce(api.ctx, kGpu, d, op, da, da, db, count, stream),
                HVD_OK)
          << last_error();
      EXPECT_EQ(download(da, a.size()), want)
          << dtype_name(d) << " " << op_name(op);
    }
  }
}

TEST_F(CudaKernelsTest, UnknownDtypeIsRefusedBeforeLaunch) {
  uint8_t* buf = device_bytes(16);
  EXPECT_EQ(
      api.scale(api.ctx, kGpu, static_cast<hvd_dtype>(99), buf, 4, 2.0, stream),
      HVD_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace hvd::test
