// Ring reducescatter(v): the reduce-scatter half of the ring allreduce,
// turned by one step so that rank r ends with block r. Partial results
// travel through a scratch copy of the input's layout; incoming chunks are
// received straight into it unless the input must be copied first (a
// prescale, or `recv` overlapping `send`), when they go to window slots.
#include "../common/local_steps.h"
#include "../common/prologue.h"
#include "phases.h"
#include "ring.h"

namespace hvd::reducers::ring {

void build_reducescatter(hvd_task_s& t, const Collective& c, const Options& o) {
  Schedule& s = t.schedule;
  const size_t mine = c.counts[c.rank];
  if (c.size == 1) {
    copy_and_scale(s, c.recv, c.send + c.bytes(c.displs[0]), mine, c.esize,
                   c.prescale, c.postscale, local_piece_elems(c.esize));
    return;
  }
  const size_t extent = reducescatter_extent(c, "ring");
  if (extent == 0) return;
  const bool overlapping =
      overlaps(c.send, c.bytes(extent), c.recv, c.bytes(mine));
  const bool prescaled = c.prescale != 1.0;
  const bool direct = !overlapping && !prescaled;
  const size_t n = (size_t)c.size;
  const RingLayout L(c, c.displs, c.counts, o.chunk_bytes, (uint32_t)n - 1);
  const size_t C = L.chunks;
  t.window.reset(reduce_scatter_slots(L, o.pipeline_depth));
  t.send_window.reset((size_t)o.pipeline_depth);

  uint8_t* work = static_cast<uint8_t*>(t.lease(c.bytes(extent)));
  std::vector<Op>& ready = t.ops[3];
  Op copied_all = Schedule::kNone;
  if (!direct) {
    // The contributions are copied (and prescaled) into `work` chunk by
    // chunk; results may overwrite `send` only once all of it is copied.
    ready.assign(n * C, Schedule::kNone);
    copied_all = s.join();
    for (int32_t k = 0; k < (int32_t)n; ++k) {
      for (size_t ch = 0; ch < C; ++ch) {
        const size_t len = L.chunk_length(k, ch);
        if (len == 0) continue;
        const size_t at = c.bytes(L.chunk_start(k, ch));
        ready[k * C + ch] = copy_and_scale(s, work + at, c.send + at, len,
                                           c.esize, c.prescale, 1.0, len);
        s.after(copied_all, ready[k * C + ch]);
      }
    }
  }
  ReduceScatterPhase rs;
  rs.shift = 1;
  rs.local = direct ? c.send : work;
  rs.local_ready = direct ? nullptr : ready.data();
  rs.partial = work;
  rs.result = c.recv;
  rs.slots = direct ? nullptr
                    : static_cast<uint8_t*>(
                          t.lease(t.window.depth() * c.bytes(L.chunk_elems)));
  rs.result_after = overlapping ? copied_all : Schedule::kNone;
  rs.postscale = c.postscale;
  std::vector<Op>& done = t.ops[1];
  std::vector<Op>& sends = t.ops[2];
  done.assign(C, Schedule::kNone);
  sends.assign((n - 1) * C, Schedule::kNone);
  reduce_scatter_phase(t, L, rs, done.data(), sends.data());
}

}  // namespace hvd::reducers::ring
