#include "options.h"

#include "common/config_reader.h"

namespace hvd_ofi {

Options read_options(const hvd_host* host) {
  hvd_transport_common::ConfigReader reader(
      host,
      {"provider", "max_requests", "peer_timeout", "ping_interval",
       "mr_cache_entries", "max_message_size", "ordering", "registration"});
  Options o;
  o.provider = reader.text("provider", o.provider,
                           "expected a provider name such as \"tcp\", "
                           "\"efa\", \"shm\" or \"verbs;ofi_rxm\"");
  o.max_requests = reader.max_requests(o.max_requests);
  o.peer_timeout_ms = static_cast<uint64_t>(
      reader
          .duration("peer_timeout",
                    std::chrono::milliseconds(o.peer_timeout_ms))
          .count());
  o.ping_interval_ms = static_cast<uint64_t>(
      reader
          .duration("ping_interval",
                    std::chrono::milliseconds(o.ping_interval_ms))
          .count());
  if (o.ping_interval_ms >= o.peer_timeout_ms) {
    reader.reject("ping_interval", "must be shorter than peer_timeout");
  }
  o.mr_cache_entries = static_cast<uint32_t>(
      reader.integer("mr_cache_entries", o.mr_cache_entries, 1, 1 << 16));
  o.max_message_bytes =
      reader.size("max_message_size", 0, 0, uint64_t{1} << 62);
  o.serialize_sends = reader.choice("ordering", "provider",
                                    {"provider", "serialize"}) == "serialize";
  o.register_always = reader.choice("registration", "provider",
                                    {"provider", "always"}) == "always";
  return o;
}

}  // namespace hvd_ofi
