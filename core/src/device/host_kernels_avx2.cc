// The kernels compiled for AVX2 with F16C (fp16 converted by the hardware).
// Built only on x86-64 with -mavx2 -mf16c; used only when the CPU has both.
#define HVD_KERNEL_NS avx2
#define HVD_KERNEL_F16C 1
#include "device/host_kernels_impl.h"

namespace hvd {

const HostKernels& host_kernels_avx2() {
  static constexpr HostKernels table = avx2::make_table("avx2");
  return table;
}

}  // namespace hvd
