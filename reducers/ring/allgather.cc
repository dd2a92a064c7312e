// Ring allgather(v): rank r's block travels the ring, one step a rank,
// chunk by chunk. Blocks land straight in `recv`; this rank's own block is
// sent from `send` while it is copied into place.
#include <algorithm>

#include "../common/local_steps.h"
#include "horovod_plugin/boundary.h"
#include "phases.h"
#include "ring.h"

using hvd_plugin::fail;

namespace hvd::reducers::ring {

void build_allgather(hvd_task_s& t, const Collective& c, const Options& o) {
  Schedule& s = t.schedule;
  const size_t mine = c.counts[c.rank];
  uint8_t* own = c.recv + c.bytes(c.displs[c.rank]);
  // In place: own block already at its place (MPI_IN_PLACE style).
  const bool in_place = c.send == own || c.send == c.recv;
  if (!in_place && mine > 0) {
    size_t extent = 0;
    for (int32_t k = 0; k < c.size; ++k) {
      extent = std::max(extent, c.displs[k] + c.counts[k]);
    }
    if (overlaps(c.send, c.bytes(mine), c.recv, c.bytes(extent))) {
      fail(
          HVD_ERR_INVALID_ARGUMENT,
          "ring allgather: send overlaps recv other than at this rank's block");
    }
    copy_and_scale(s, own, c.send, mine, c.esize, 1.0, 1.0,
                   local_piece_elems(c.esize));
  }
  if (c.size == 1) return;
  const RingLayout L(c, c.displs, c.counts, o.chunk_bytes,
                     (uint32_t)c.size - 1);
  t.window.reset((size_t)o.pipeline_depth);
  t.send_window.reset((size_t)o.pipeline_depth);
  AllgatherPhase ag;
  ag.first = c.rank;
  ag.buffer = c.recv;
  ag.first_source = in_place ? nullptr : c.send;
  ag.first_step = 0;
  allgather_phase(t, L, ag);
}

}  // namespace hvd::reducers::ring
