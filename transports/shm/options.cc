#include "options.h"

#include "common/config_reader.h"

namespace hvd_shm {

Options read_options(const hvd_host* host) {
  hvd_transport_common::ConfigReader reader(
      host, {"ring_size", "max_requests", "streaming_threshold",
             "rendezvous_threshold", "collective_slot_size", "one_shot_max"});
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
  o.coll_slot_bytes =
      reader.size("collective_slot_size", o.coll_slot_bytes, 4096, 1ull << 30);
  if (o.coll_slot_bytes % 4096 != 0) {
    reader.reject("collective_slot_size", "must be a multiple of 4KiB");
  }
  o.one_shot_max =
      reader.size("one_shot_max", o.one_shot_max, 0, o.coll_slot_bytes);
  return o;
}

}  // namespace hvd_shm
