// What a built-in transport uses of the host table: a check that the table is
// one this build understands, and logging through it.
#pragma once

#include <string>

#include "horovod/host.h"
#include "horovod_plugin/boundary.h"
#include "horovod_plugin/host_check.h"

namespace hvd_transport_common {

// The host table must hold every v1.0 field (the core is 1.x).
inline void check_host(const hvd_host* host) {
  hvd_plugin::check_transport_host(host);
}

inline bool log_enabled(const hvd_host* host, hvd_log_level level) {
  return host->log != nullptr && (host->log_enabled == nullptr ||
                                  host->log_enabled(host->ctx, level) != 0);
}

inline void log(const hvd_host* host, hvd_log_level level,
                const std::string& message) {
  if (log_enabled(host, level)) host->log(host->ctx, level, message.c_str());
}

// The world rank from the host table, or -1 when the core gave none.
inline int world_rank(const hvd_host* host) {
  return host->world != nullptr ? host->world->rank : -1;
}

}  // namespace hvd_transport_common
