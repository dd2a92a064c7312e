// `--peer mpi`: Open MPI's own collective (MPI_Allreduce, MPI_Allgather,
// MPI_Bcast, MPI_Alltoall, MPI_Reduce_scatter_block) on MPI_COMM_WORLD, run
// on the same buffers and sizes as ours, so the table can show the ratio.
// `--peer mpi-nb`: the non-blocking form of each (MPI_Iallreduce, ...)
// driven by MPI_Test until done, as a plugin that must stay abortable calls
// MPI: the floor of the mpi transport's native collectives.
// Needs a job started by mpirun. Built only where CMake finds Open MPI;
// elsewhere make_mpi_peer() fails saying so.
#pragma once

#include <memory>

#include "layer.h"

namespace hvd_bench {

// MPI_Init, then a Layer over MPI. Throws hvd::Error when this build has no
// MPI or the job was not started by mpirun.
std::unique_ptr<Layer> make_mpi_peer(hvd_collective collective,
                                     bool nonblocking);

}  // namespace hvd_bench
