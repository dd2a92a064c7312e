// The [transport.mpi] table.
#pragma once

#include <cstdint>

#include "horovod/host.h"

namespace hvd_mpi {

struct Options {
  // Sends (and, separately, receives) in flight per connection before
  // isend (irecv) answers HVD_AGAIN.
  uint32_t max_requests = 256;
  // Seconds a native collective may take before it fails with
  // HVD_ERR_TIMEOUT (MPI cannot say which member is missing); the default
  // is runtime.peer_timeout's.
  int64_t timeout_seconds = 10;
};

// Reads and checks the table; throws a Failure (HVD_ERR_CONFIG) after
// reporting a bad key through the host.
Options read_options(const hvd_host* host);

}  // namespace hvd_mpi
