// Direct-exchange alltoall(v) for small messages: every send and receive
// is posted at once, so the whole exchange takes one message latency
// instead of the pairwise exchange's n-1 steps in a few-deep window. Peers
// are visited in pairwise order (rank + s, rank - s) so no rank is everyone's
// first. In place, the input is copied aside first.
#include <algorithm>

#include "../common/local_steps.h"
#include "tree.h"

namespace hvd::reducers::tree {

using Op = Schedule::Op;

void build_alltoall(hvd_task_s& t, const Collective& c) {
  Schedule& s = t.schedule;
  const int32_t n = c.size, r = c.rank;
  size_t send_extent = 0, recv_extent = 0;
  for (int32_t k = 0; k < n; ++k) {
    send_extent = std::max(send_extent, c.send_displs[k] + c.send_counts[k]);
    recv_extent = std::max(recv_extent, c.displs[k] + c.counts[k]);
  }
  const uint8_t* source = c.send;
  Op source_ready = Schedule::kNone;
  if (overlaps(c.send, c.bytes(send_extent), c.recv, c.bytes(recv_extent))) {
    uint8_t* copy = static_cast<uint8_t*>(t.lease(c.bytes(send_extent)));
    source_ready = copy_and_scale(s, copy, c.send, send_extent, c.esize, 1.0,
                                  1.0, local_piece_elems(c.esize));
    source = copy;
  }
  const Op own =
      s.copy(c.recv + c.bytes(c.displs[r]), source + c.bytes(c.send_displs[r]),
             c.bytes(c.counts[r]));
  s.after(own, source_ready);
  for (int32_t step = 1; step < n; ++step) {
    const int32_t to = (r + step) % n, from = (r - step + n) % n;
    if (c.send_counts[to] > 0) {
      const Op sent = s.send(to, source + c.bytes(c.send_displs[to]),
                             c.bytes(c.send_counts[to]), 0);
      s.after(sent, source_ready);
    }
    if (c.counts[from] > 0) {
      const Op received = s.recv(from, c.recv + c.bytes(c.displs[from]),
                                 c.bytes(c.counts[from]), 0);
      s.after(received, source_ready);
    }
  }
}

}  // namespace hvd::reducers::tree
