// Tables of host reduction and scaling kernels, one table per instruction
// set the kernels were compiled for. host_reduce.cc picks the best table the
// CPU supports once; every variant gives bit-identical results.
#pragma once

#include <cstddef>

#include "horovod/abi.h"

namespace hvd {

// dst[i] = a[i] op b[i]. dst may be a or b (exactly); any other overlap is
// computed front to back.
using ReduceKernel = void (*)(void* dst, const void* a, const void* b,
                              size_t count);
using ScaleKernel = void (*)(void* buf, size_t count, double factor);

// Kernel ops in table order.
enum KernelOp {
  kKernelSum = 0,
  kKernelMin,
  kKernelMax,
  kKernelProduct,
  kKernelOpCount
};

struct HostKernels {
  const char* name;  // "generic", "avx2"
  ReduceKernel reduce[HVD_DTYPE_COUNT][kKernelOpCount];
  ScaleKernel scale[HVD_DTYPE_COUNT];
};

// The table reduce_host() and scale_host() use: the best the CPU supports.
const HostKernels& host_kernels();

const HostKernels& host_kernels_generic();
#if defined(HVD_HAVE_AVX2_KERNELS)
const HostKernels& host_kernels_avx2();  // needs AVX2 and F16C
#endif

}  // namespace hvd
