// The build without MPI (no Open MPI found, or HOROVOD_BENCH_PEERS=OFF).
#include "common/error.h"
#include "mpi_peer.h"

namespace hvd_bench {

std::unique_ptr<Layer> make_mpi_peer(hvd_collective, bool) {
  throw hvd::Error(
      HVD_ERR_UNSUPPORTED,
      "--peer mpi: this horovod-bench was built without MPI (CMake "
      "found no Open MPI, or HOROVOD_BENCH_PEERS was OFF, as for a wheel)");
}

}  // namespace hvd_bench
