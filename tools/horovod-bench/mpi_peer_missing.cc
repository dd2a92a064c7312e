// The build without MPI (CMake found no Open MPI).
#include "common/error.h"
#include "mpi_peer.h"

namespace hvd_bench {

std::unique_ptr<Layer> make_mpi_peer(hvd_collective, bool) {
  throw hvd::Error(
      HVD_ERR_UNSUPPORTED,
      "--peer mpi: this horovod-bench was built without MPI (CMake "
      "found no Open MPI when it was configured)");
}

}  // namespace hvd_bench
