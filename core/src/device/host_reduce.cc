#include <string>

#include "common/error.h"
#include "device/device.h"
#include "device/host_kernels.h"

namespace hvd {
namespace {

const HostKernels& pick_kernels() {
#if defined(HVD_HAVE_AVX2_KERNELS)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) {
    return host_kernels_avx2();
  }
#endif
  return host_kernels_generic();
}

int kernel_op(hvd_reduce_op op) {
  switch (op) {
    case HVD_OP_SUM:
      return kKernelSum;
    case HVD_OP_MIN:
      return kKernelMin;
    case HVD_OP_MAX:
      return kKernelMax;
    case HVD_OP_PRODUCT:
      return kKernelProduct;
  }
  throw Error(HVD_ERR_INVALID_ARGUMENT,
              std::string("host reduction: op ") + op_name(op) +
                  " is not a kernel op (SUM, MIN, MAX, PRODUCT)");
}

void check_dtype(hvd_dtype dtype) {
  if (dtype < 0 || dtype >= HVD_DTYPE_COUNT) {
    throw Error(HVD_ERR_INVALID_ARGUMENT,
                "host reduction: unknown dtype " + std::to_string(dtype));
  }
}

}  // namespace

const HostKernels& host_kernels() {
  static const HostKernels& kernels = pick_kernels();
  return kernels;
}

void reduce_host(hvd_dtype dtype, hvd_reduce_op op, void* dst, const void* a,
                 const void* b, size_t count) {
  check_dtype(dtype);
  const int k = kernel_op(op);
  if (count == 0) return;
  host_kernels().reduce[dtype][k](dst, a, b, count);
}

void scale_host(hvd_dtype dtype, void* buf, size_t count, double factor) {
  check_dtype(dtype);
  if (count == 0 || factor == 1.0) return;
  host_kernels().scale[dtype](buf, count, factor);
}

}  // namespace hvd
