// Bruck's allgather(v) with every block placed directly: at step k, with
// d = 2^k, a rank holding blocks [r, r + d) sends the first min(d, n - d) of
// them to r - d and receives as many from r + d, so ceil(log2 n) steps
// gather everything. Each block is its own message, straight from and into
// `recv`; a block's tag is its distance from the receiver.
#include <algorithm>

#include "../common/prologue.h"
#include "tree.h"

namespace hvd::reducers::tree {

using Op = Schedule::Op;

void build_allgather(hvd_task_s& t, const Collective& c) {
  Schedule& s = t.schedule;
  const int32_t n = c.size, r = c.rank;
  const bool in_place = place_own_block(t, c, "tree");
  // placed[j]: the op that puts block (r + j) % n in place.
  std::vector<Op>& placed = t.ops[0];
  placed.assign(n, Schedule::kNone);
  for (int32_t d = 1; d < n; d *= 2) {
    const int32_t m = std::min(d, n - d);
    const int32_t to = (r - d + n) % n, from = (r + d) % n;
    for (int32_t j = 0; j < m; ++j) {
      const int32_t block = (r + j) % n;
      if (c.counts[block] > 0) {
        const uint8_t* data =
            j == 0 && !in_place ? c.send : c.recv + c.bytes(c.displs[block]);
        const Op sent =
            s.send(to, data, c.bytes(c.counts[block]), (uint32_t)(d + j));
        s.after(sent, j == 0 ? Schedule::kNone : placed[j]);
      }
      const int32_t incoming = (r + d + j) % n;
      if (c.counts[incoming] > 0) {
        placed[d + j] = s.recv(from, c.recv + c.bytes(c.displs[incoming]),
                               c.bytes(c.counts[incoming]), (uint32_t)(d + j));
      }
    }
  }
}

}  // namespace hvd::reducers::tree
