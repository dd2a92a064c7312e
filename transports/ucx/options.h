// The [transport.ucx] table.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "horovod/host.h"

namespace hvd_ucx {

struct Options {
  // Sends (and, separately, receives) not yet finished by test() per
  // connection before isend (irecv) answers HVD_AGAIN.
  uint32_t max_requests = 1024;
  // UCX settings from the table (names as ucp_config_modify knows them,
  // e.g. "TLS"), applied over what UCX read from its UCX_* environment.
  struct UcxSetting {
    std::string key;
    std::string name;
    std::string value;
  };
  std::vector<UcxSetting> ucx;
};

// Reads and checks the table; throws a Failure (HVD_ERR_CONFIG) after
// reporting a bad key through the host.
Options read_options(const hvd_host* host);

}  // namespace hvd_ucx
