// Ring allgather(v): rank r's block travels the ring, one step a rank,
// chunk by chunk. Blocks land straight in `recv`; this rank's own block is
// sent from `send` while it is copied into place.
#include "../common/prologue.h"
#include "phases.h"
#include "ring.h"

namespace hvd::reducers::ring {

void build_allgather(hvd_task_s& t, const Collective& c, const Options& o) {
  const bool in_place = place_own_block(t, c, "ring");
  if (c.size == 1) return;
  const RingLayout L(c, c.displs, c.counts, o.chunk_bytes,
                     (uint32_t)c.size - 1);
  t.send_window.reset((size_t)o.pipeline_depth);
  AllgatherPhase ag;
  ag.first = c.rank;
  ag.buffer = c.recv;
  ag.first_source = in_place ? nullptr : c.send;
  ag.first_step = 0;
  allgather_phase(t, L, ag);
}

}  // namespace hvd::reducers::ring
