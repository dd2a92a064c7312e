// The baseline kernels: whatever the target's default instruction set
// allows (SSE2 on x86-64).
#define HVD_KERNEL_NS generic
#include "device/host_kernels_impl.h"

namespace hvd {

const HostKernels& host_kernels_generic() {
  static constexpr HostKernels table = generic::make_table("generic");
  return table;
}

}  // namespace hvd
