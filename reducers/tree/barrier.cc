// Dissemination barrier: in round k every rank signals rank + 2^k once it
// has heard from rank - 2^j for every earlier round j; after ceil(log2 n)
// rounds each rank has heard, directly or not, from every other. (Waiting
// for the previous round alone is not enough: receives of different
// rounds may complete in any order.)
#include "tree.h"

namespace hvd::reducers::tree {

void build_barrier(hvd_task_s& t, const Collective& c) {
  Schedule& s = t.schedule;
  const int32_t n = c.size, r = c.rank;
  Schedule::Op heard = Schedule::kNone;  // every receive of the rounds so far
  for (int32_t d = 1, k = 0; d < n; d *= 2, ++k) {
    const Schedule::Op sent = s.send((r + d) % n, nullptr, 0, (uint32_t)k);
    s.after(sent, heard);
    const Schedule::Op received =
        s.recv((r - d + n) % n, nullptr, 0, (uint32_t)k);
    const Schedule::Op all = s.join();
    s.after(all, {heard, received});
    heard = all;
  }
}

}  // namespace hvd::reducers::tree
