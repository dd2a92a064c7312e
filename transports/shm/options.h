// The [transport.shm] table.
#pragma once

#include <cstdint>

#include "horovod/host.h"

namespace hvd_shm {

struct Options {
  // Bytes of each direction's ring (a power of two).
  uint64_t ring_bytes = 1u << 20;
  // Sends (and, separately, receives) pending per connection before isend
  // (irecv) answers HVD_AGAIN.
  uint32_t max_requests = 1024;
  // Messages at least this large are written to their destination with
  // streaming stores.
  uint64_t streaming_threshold = 8u << 20;
  // Sends at least this large from memory of mem_alloc() are not copied
  // through the ring: the receiver copies them straight out of the sender's
  // segment.
  uint64_t rendezvous_threshold = 64u << 10;
  // Native collectives: bytes of each of a member's two slots in the
  // communicator's segment (a two-shot round), and the largest allreduce
  // that runs one-shot.
  uint64_t coll_slot_bytes = 256u << 10;
  uint64_t one_shot_max = 32u << 10;
};

// Reads and checks the table; throws a Failure (HVD_ERR_CONFIG) after
// reporting a bad key through the host.
Options read_options(const hvd_host* host);

}  // namespace hvd_shm
