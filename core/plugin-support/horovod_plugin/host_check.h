// The check a built-in transport makes of the host table it is given.
#pragma once

#include <string>

#include "horovod/host.h"
#include "horovod_plugin/boundary.h"

namespace hvd_plugin {

// The host table must hold every v1.0 field (the core is 1.x); throws a
// Failure otherwise.
inline void check_transport_host(const hvd_host* host) {
  if (host == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "init: host is NULL");
  if (host->abi_major != HVD_ABI_VERSION_MAJOR ||
      host->struct_size < HVD_STRUCT_SIZE(hvd_host, timeline_end)) {
    fail(HVD_ERR_VERSION,
         "init: host table of ABI " + std::to_string(host->abi_major) + "." +
             std::to_string(host->abi_minor) + " (" +
             std::to_string(host->struct_size) +
             " bytes) is not one this transport (ABI 1.0) understands");
  }
}

}  // namespace hvd_plugin
