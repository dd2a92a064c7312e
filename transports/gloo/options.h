// The [transport.gloo] table.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "horovod/host.h"

namespace hvd_gloo {

struct Options {
  // Where Gloo's pairs and the connection handshake listen ("lo" keeps the
  // traffic of one host on loopback).
  std::string interface = "lo";
  // How long a connection set-up, a collective or a send waits for a peer
  // (HOROVOD_GLOO_TIMEOUT_SECONDS).
  std::chrono::milliseconds timeout{30000};
  // Sends (and, separately, receives) not yet reported by test() per
  // connection before isend (irecv) answers HVD_AGAIN.
  uint32_t max_requests = 1024;
};

// Reads and checks the table; throws a Failure (HVD_ERR_CONFIG) after
// reporting a bad key through the host.
Options read_options(const hvd_host* host);

}  // namespace hvd_gloo
