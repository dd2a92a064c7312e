// Ring barrier: an empty token passed n-1 steps around the ring; a rank
// forwards step s only after receiving step s-1, so its last receive
// proves that every other rank has arrived.
#include "phases.h"
#include "ring.h"

namespace hvd::reducers::ring {

void build_barrier(hvd_task_s& t, const Collective& c) {
  Schedule& s = t.schedule;
  const int32_t n = c.size;
  const int32_t left = (c.rank - 1 + n) % n, right = (c.rank + 1) % n;
  Op received = Schedule::kNone;
  for (int32_t step = 0; step + 1 < n; ++step) {
    const Op sent = s.send(right, nullptr, 0, (uint32_t)step);
    s.after(sent, received);
    received = s.recv(left, nullptr, 0, (uint32_t)step);
  }
}

}  // namespace hvd::reducers::ring
