#include "common/error.h"
#include "gloo_peer.h"

namespace hvd_bench {

std::unique_ptr<Layer> make_gloo_peer(hvd_collective, int, int) {
  throw hvd::Error(HVD_ERR_UNSUPPORTED,
                   "--peer gloo: this horovod-bench was built without Gloo "
                   "(install libgloo-dev and reconfigure with "
                   "HOROVOD_BENCH_PEERS on; a wheel has it off)");
}

}  // namespace hvd_bench
