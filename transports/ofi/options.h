// The keys of [transport.ofi].
#pragma once

#include <cstdint>
#include <string>

#include "horovod/host.h"

namespace hvd_ofi {

struct Options {
  std::string provider = "tcp";     // fi_getinfo's prov_name
  uint32_t max_requests = 1024;     // sends in flight per connection
  uint64_t peer_timeout_ms = 5000;  // silence that declares a peer dead
  uint64_t ping_interval_ms = 200;  // probe a silent peer this often
  uint32_t mr_cache_entries = 64;   // registrations kept for reuse
  uint64_t max_message_bytes = 0;   // below the provider's max_msg_size; 0: it
  bool serialize_sends = false;     // ordering = "serialize"
  bool register_always = false;     // registration = "always"
};

Options read_options(const hvd_host* host);

}  // namespace hvd_ofi
