// The [transport.nccl] table.
#pragma once

#include <chrono>
#include <cstdint>

#include "horovod/host.h"

namespace hvd_nccl {

struct Options {
  // CUDA device of this rank; -1: the local rank modulo the devices here.
  int32_t device = -1;
  // How long a communicator's set-up or one collective may take before the
  // communicator is aborted (a dead or stuck member), and the request fails.
  std::chrono::milliseconds timeout{60000};
};

// Reads and checks the table; throws a Failure (HVD_ERR_CONFIG) after
// reporting a bad key through the host.
Options read_options(const hvd_host* host);

}  // namespace hvd_nccl
