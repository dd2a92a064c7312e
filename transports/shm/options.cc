#include "options.h"

#include "common/config_reader.h"

namespace hvd_shm {

Options read_options(const hvd_host* host) {
  hvd_transport_common::ConfigReader reader(
      host, {"ring_size", "max_requests", "streaming_threshold",
             "rendezvous_threshold"});
  Options o;
  o.ring_bytes = reader.size("ring_size", o.ring_bytes, 4096, 1ull << 30);
  if ((o.ring_bytes & (o.ring_bytes - 1)) != 0) {
    reader.reject("ring_size", "must be a power of two");
  }
  o.max_requests = reader.max_requests(o.max_requests);
  o.streaming_threshold =
      reader.size("streaming_threshold", o.streaming_threshold, 0, UINT64_MAX);
  o.rendezvous_threshold = reader.size("rendezvous_threshold",
                                       o.rendezvous_threshold, 0, UINT64_MAX);
  return o;
}

}  // namespace hvd_shm
