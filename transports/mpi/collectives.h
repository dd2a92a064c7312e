// The mpi transport's native collectives (hvd_transport_collectives):
// MPI_Iallreduce, MPI_Iallgatherv, MPI_Ibcast, MPI_Ireduce_scatter,
// MPI_Ialltoallv and MPI_Ibarrier on a communicator per team, created with
// MPI_Comm_create_group (collective over the team's members only). Requests
// complete through the transport's test(), bounded by [transport.mpi]
// timeout.
#pragma once

#include "horovod/transport.h"

namespace hvd_mpi {

extern const hvd_transport_collectives kCollectives;

}  // namespace hvd_mpi
