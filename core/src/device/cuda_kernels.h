// The CUDA kernels (libhorovod-cuda-kernels.so, cuda/kernels.h), loaded on
// first use from the directory of the library that holds the core, then
// along the loader's search path. Like the CUDA runtime they need, they are
// optional: without them CUDA tensors that need a kernel (fused or scaled
// ops) are staged through host memory.
#pragma once

#include <string>

#include "device/cuda/kernels.h"

namespace hvd {

class CudaKernels {
 public:
  // Loads the library on the first call; thread-safe.
  static const CudaKernels& get();

  bool loaded() const { return reason_.empty(); }
  // Why they are not loaded ("libhorovod-cuda-kernels.so: cannot open...").
  const std::string& unavailable_reason() const { return reason_; }

  int (*batched_copy)(const hvd_cuda_copy*, size_t, void*) = nullptr;
  int (*scale)(int32_t, void*, size_t, double, void*) = nullptr;
  int (*reduce)(int32_t, int32_t, void*, const void*, const void*, size_t,
                void*) = nullptr;

 private:
  CudaKernels();
  std::string reason_;
};

}  // namespace hvd
