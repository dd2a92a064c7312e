// Host layout from every rank's host identity: hosts are numbered in order
// of their lowest rank, and ranks within a host in rank order.
#pragma once

#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace hvd {

HostLayout layout_from_hosts(const std::vector<std::string>& host_of_rank,
                             int rank);

// HOROVOD_HOSTNAME when set, else gethostname().
std::string this_host_identity();

// An environment variable as a non-negative int; -1 when unset; throws
// hvd::Error HVD_ERR_CONFIG naming the variable when it is not a number.
int env_int(const char* name);

}  // namespace hvd
