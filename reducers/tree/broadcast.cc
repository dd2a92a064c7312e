// Binomial-tree broadcast: relative to the root, rank v receives from v
// with its lowest set bit cleared and forwards to v + 2^k for every 2^k
// below that bit, largest subtree first. Long messages go down the tree
// segment by segment.
#include <algorithm>

#include "tree.h"

namespace hvd::reducers::tree {

using Op = Schedule::Op;

void build_broadcast(hvd_task_s& t, const Collective& c, const Options& o) {
  if (c.count == 0 || c.size == 1) return;
  Schedule& s = t.schedule;
  const int32_t n = c.size;
  const int32_t v = (c.rank - c.root + n) % n;
  auto actual = [&](int32_t relative) { return (relative + c.root) % n; };
  int32_t parent = -1, mask = 1;
  for (; mask < n; mask <<= 1) {
    if (v & mask) {
      parent = actual(v - mask);
      break;
    }
  }
  // Children: v + m for m = mask/2, mask/4, ..., 1 (the root: every power
  // of two below n).
  const size_t seg = segment_elems(c, o, 1);
  const size_t depth = 4;
  t.window.reset(depth);
  for (size_t at = 0, g = 0; at < c.count; at += seg, ++g) {
    const size_t len = std::min(seg, c.count - at);
    uint8_t* data = c.recv + c.bytes(at);
    const size_t slot = t.window.take();
    const Op done = s.join();
    Op received = Schedule::kNone;
    if (parent >= 0) {
      received = s.recv(parent, data, c.bytes(len), (uint32_t)g);
      s.after(received, t.window.previous_release(slot));
      s.after(done, received);
    }
    for (int32_t m = mask >> 1; m > 0; m >>= 1) {
      if (v + m >= n) continue;
      const Op sent = s.send(actual(v + m), data, c.bytes(len), (uint32_t)g);
      s.after(sent, {received, t.window.previous_release(slot)});
      s.after(done, sent);
    }
    t.window.release(slot, done);
  }
}

}  // namespace hvd::reducers::tree
