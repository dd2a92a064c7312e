// The device layer's CUDA kernels: a batched copy (many tensors into or out
// of a fusion buffer in one launch), scaling with Horovod's GPU semantics
// and element-wise reduction, per dtype.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "device/cuda/kernels.h"
#include "horovod/abi.h"

namespace {

constexpr int kCopiesPerLaunch = 64;
constexpr int kCopyThreads = 256;
constexpr int kMaxBlocksPerCopy = 1024;

// Passed by value: the parameter space (4 KiB) holds 64 copies.
struct CopyBatch {
  void* dst[kCopiesPerLaunch];
  const void* src[kCopiesPerLaunch];
  uint64_t bytes[kCopiesPerLaunch];
};

template <typename Word>
__device__ void copy_words(uint64_t thread, uint64_t stride, void* dst,
                           const void* src, uint64_t bytes) {
  const uint64_t words = bytes / sizeof(Word);
  Word* d = static_cast<Word*>(dst);
  const Word* s = static_cast<const Word*>(src);
  if (s != nullptr) {
    for (uint64_t i = thread; i < words; i += stride) d[i] = s[i];
  } else {
    Word zero{};
    for (uint64_t i = thread; i < words; i += stride) d[i] = zero;
  }
  const uint64_t tail = bytes - words * sizeof(Word);
  if (thread < tail) {
    const uint64_t at = words * sizeof(Word) + thread;
    static_cast<unsigned char*>(dst)[at] =
        src != nullptr ? static_cast<const unsigned char*>(src)[at] : 0;
  }
}

// Blocks [c * per_copy, (c + 1) * per_copy) copy copy c, with the widest
// word both addresses allow.
__global__ void batched_copy_kernel(CopyBatch batch, int per_copy) {
  const int c = blockIdx.x / per_copy;
  const uint64_t thread =
      uint64_t(blockIdx.x % per_copy) * blockDim.x + threadIdx.x;
  const uint64_t stride = uint64_t(per_copy) * blockDim.x;
  void* dst = batch.dst[c];
  const void* src = batch.src[c];
  const uint64_t bytes = batch.bytes[c];
  const uintptr_t align =
      reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
  if (align % 16 == 0) {
    copy_words<uint4>(thread, stride, dst, src, bytes);
  } else if (align % 8 == 0) {
    copy_words<uint64_t>(thread, stride, dst, src, bytes);
  } else if (align % 4 == 0) {
    copy_words<uint32_t>(thread, stride, dst, src, bytes);
  } else if (align % 2 == 0) {
    copy_words<uint16_t>(thread, stride, dst, src, bytes);
  } else {
    copy_words<unsigned char>(thread, stride, dst, src, bytes);
  }
}

// ---- element types: load as float/double/integer, store back ------------

struct Half {
  using Storage = __half;
  __device__ static float load(__half x) { return __half2float(x); }
  __device__ static __half store(float x) { return __float2half_rn(x); }
};
struct BFloat16 {
  using Storage = __nv_bfloat16;
  __device__ static float load(__nv_bfloat16 x) { return __bfloat162float(x); }
  __device__ static __nv_bfloat16 store(float x) {
    return __float2bfloat16_rn(x);
  }
};

template <typename T>
__global__ void scale_float_kernel(T* buf, uint64_t n, T factor) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x) {
    buf[i] = factor * buf[i];
  }
}

// The product of two 16-bit floats is exact in float: one rounding, as
// __hmul.
template <typename F>
__global__ void scale_16_kernel(typename F::Storage* buf, uint64_t n,
                                float factor) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x) {
    buf[i] = F::store(factor * F::load(buf[i]));
  }
}

template <typename T>
__global__ void scale_int_kernel(T* buf, uint64_t n, double factor) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x) {
    buf[i] = static_cast<T>(factor * static_cast<double>(buf[i]));
  }
}

__global__ void scale_bool_kernel(bool* buf, uint64_t n, bool keep) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x) {
    buf[i] = buf[i] && keep;
  }
}

// Sums and products are computed in Wide<T>: integers wrap, computed
// unsigned and at least 32 bits wide (as the host kernels), so no promotion
// to int can overflow; floats in their own type.
template <typename T>
using Wide =
    std::conditional_t<std::is_integral_v<T>,
                       std::conditional_t<(sizeof(T) > 4), uint64_t, uint32_t>,
                       T>;

template <typename T>
__device__ T combine(int op, T a, T b) {
  switch (op) {
    case HVD_OP_MIN:
      return b < a ? b : a;
    case HVD_OP_MAX:
      return a < b ? b : a;
    case HVD_OP_PRODUCT:
      return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b));
    default:
      return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
  }
}

template <typename T>
__global__ void reduce_kernel(int op, T* dst, const T* a, const T* b,
                              uint64_t n) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x) {
    dst[i] = combine(op, a[i], b[i]);
  }
}

template <typename F>
__global__ void reduce_16_kernel(int op, typename F::Storage* dst,
                                 const typename F::Storage* a,
                                 const typename F::Storage* b, uint64_t n) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x) {
    const float x = F::load(a[i]), y = F::load(b[i]);
    // MIN and MAX pick an operand: exact either way.
    dst[i] = F::store(combine(op, x, y));
  }
}

__global__ void reduce_bool_kernel(int op, bool* dst, const bool* a,
                                   const bool* b, uint64_t n) {
  const bool any = op == HVD_OP_SUM || op == HVD_OP_MAX;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x) {
    dst[i] = any ? (a[i] || b[i]) : (a[i] && b[i]);
  }
}

constexpr int kThreads = 256;

unsigned blocks_for(uint64_t n) {
  const uint64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::min<uint64_t>(blocks, 65535u * 8u));
}

template <typename Kernel, typename... Args>
int launch(Kernel kernel, uint64_t n, cudaStream_t stream, Args... args) {
  if (n == 0) return cudaSuccess;
  kernel<<<blocks_for(n), kThreads, 0, stream>>>(args...);
  return cudaGetLastError();
}

template <typename T>
int reduce_as(int op, void* dst, const void* a, const void* b, uint64_t n,
              cudaStream_t stream) {
  return launch(reduce_kernel<T>, n, stream, op, static_cast<T*>(dst),
                static_cast<const T*>(a), static_cast<const T*>(b), n);
}

}  // namespace

extern "C" int hvd_cuda_kernels_version(void) {
  return HVD_CUDA_KERNELS_VERSION;
}

extern "C" int hvd_cuda_batched_copy(const hvd_cuda_copy* copies, size_t count,
                                     void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  for (size_t first = 0; first < count; first += kCopiesPerLaunch) {
    const int n =
        static_cast<int>(std::min<size_t>(kCopiesPerLaunch, count - first));
    CopyBatch batch{};
    uint64_t largest = 0;
    for (int i = 0; i < n; ++i) {
      batch.dst[i] = copies[first + i].dst;
      batch.src[i] = copies[first + i].src;
      batch.bytes[i] = copies[first + i].bytes;
      largest = std::max(largest, batch.bytes[i]);
    }
    if (largest == 0) continue;
    // About 16 words of 16 bytes per thread for the largest copy.
    const uint64_t per_block = uint64_t(kCopyThreads) * 16 * 16;
    const int per_copy = static_cast<int>(std::min<uint64_t>(
        kMaxBlocksPerCopy, (largest + per_block - 1) / per_block));
    batched_copy_kernel<<<n * per_copy, kCopyThreads, 0, s>>>(batch, per_copy);
    const cudaError_t error = cudaGetLastError();
    if (error != cudaSuccess) return error;
  }
  return cudaSuccess;
}

extern "C" int hvd_cuda_scale(int32_t dtype, void* buf, size_t count,
                              double factor, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const uint64_t n = count;
  switch (dtype) {
    case HVD_UINT8:
      return launch(scale_int_kernel<uint8_t>, n, s, (uint8_t*)buf, n, factor);
    case HVD_INT8:
      return launch(scale_int_kernel<int8_t>, n, s, (int8_t*)buf, n, factor);
    case HVD_UINT16:
      return launch(scale_int_kernel<uint16_t>, n, s, (uint16_t*)buf, n,
                    factor);
    case HVD_INT16:
      return launch(scale_int_kernel<int16_t>, n, s, (int16_t*)buf, n, factor);
    case HVD_INT32:
      return launch(scale_int_kernel<int32_t>, n, s, (int32_t*)buf, n, factor);
    case HVD_INT64:
      return launch(scale_int_kernel<int64_t>, n, s, (int64_t*)buf, n, factor);
    case HVD_FLOAT16:
      return launch(scale_16_kernel<Half>, n, s, (__half*)buf, n,
                    __half2float(__float2half_rn(static_cast<float>(factor))));
    case HVD_BFLOAT16:
      return launch(
          scale_16_kernel<BFloat16>, n, s, (__nv_bfloat16*)buf, n,
          __bfloat162float(__float2bfloat16_rn(static_cast<float>(factor))));
    case HVD_FLOAT32:
      return launch(scale_float_kernel<float>, n, s, (float*)buf, n,
                    static_cast<float>(factor));
    case HVD_FLOAT64:
      return launch(scale_float_kernel<double>, n, s, (double*)buf, n, factor);
    case HVD_BOOL:
      return launch(scale_bool_kernel, n, s, (bool*)buf, n, factor != 0.0);
  }
  return cudaErrorInvalidValue;
}

extern "C" int hvd_cuda_reduce(int32_t dtype, int32_t op, void* dst,
                               const void* a, const void* b, size_t count,
                               void* stream) {
  if (op != HVD_OP_SUM && op != HVD_OP_MIN && op != HVD_OP_MAX &&
      op != HVD_OP_PRODUCT) {
    return cudaErrorInvalidValue;
  }
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const uint64_t n = count;
  switch (dtype) {
    case HVD_UINT8:
      return reduce_as<uint8_t>(op, dst, a, b, n, s);
    case HVD_INT8:
      return reduce_as<int8_t>(op, dst, a, b, n, s);
    case HVD_UINT16:
      return reduce_as<uint16_t>(op, dst, a, b, n, s);
    case HVD_INT16:
      return reduce_as<int16_t>(op, dst, a, b, n, s);
    case HVD_INT32:
      return reduce_as<int32_t>(op, dst, a, b, n, s);
    case HVD_INT64:
      return reduce_as<int64_t>(op, dst, a, b, n, s);
    case HVD_FLOAT16:
      return launch(reduce_16_kernel<Half>, n, s, int(op), (__half*)dst,
                    (const __half*)a, (const __half*)b, n);
    case HVD_BFLOAT16:
      return launch(reduce_16_kernel<BFloat16>, n, s, int(op),
                    (__nv_bfloat16*)dst, (const __nv_bfloat16*)a,
                    (const __nv_bfloat16*)b, n);
    case HVD_FLOAT32:
      return reduce_as<float>(op, dst, a, b, n, s);
    case HVD_FLOAT64:
      return reduce_as<double>(op, dst, a, b, n, s);
    case HVD_BOOL:
      return launch(reduce_bool_kernel, n, s, int(op), (bool*)dst,
                    (const bool*)a, (const bool*)b, n);
  }
  return cudaErrorInvalidValue;
}
