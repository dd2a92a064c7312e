// The [transport.tcp] table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "horovod/host.h"

namespace hvd_tcp {

struct Options {
  // Sockets per connection; messages of split_threshold bytes or more are
  // cut into one part per socket.
  uint32_t streams = 2;
  uint64_t split_threshold = 1u << 20;
  // Sends (and, separately, receives) pending per connection before isend
  // (irecv) answers HVD_AGAIN.
  uint32_t max_requests = 1024;
  // The kernel's congestion control algorithm for the streams: "auto" is
  // "reno" between two addresses of one host (there is no network to share,
  // and a pacing algorithm such as bbr only slows loopback down) and the
  // system's default otherwise; "system" never sets one; else a name from
  // /proc/sys/net/ipv4/tcp_available_congestion_control.
  std::string congestion_control = "auto";
  // Interfaces to listen on, advertise and connect from (names, such as
  // "eth0"); empty: listen on all, advertise every interface that is up.
  // HOROVOD_NETWORK_INTERFACES and horovodrun --network-interfaces arrive
  // here through the core's configuration.
  std::vector<std::string> interfaces;
};

// Reads and checks the table; throws a Failure (HVD_ERR_CONFIG) after
// reporting a bad key through the host.
Options read_options(const hvd_host* host);

}  // namespace hvd_tcp
