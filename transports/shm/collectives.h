// The shm transport's native collectives (hvd_transport_collectives):
// allreduce, broadcast, allgatherv and barrier of host memory through a
// segment shared by the team (comm.h). reducescatter and alltoallv are not
// offered: supports() says 0 and the planner takes a point-to-point
// algorithm.
#pragma once

#include "horovod/transport.h"

namespace hvd_shm {

extern const hvd_transport_collectives kCollectives;

}  // namespace hvd_shm
