// Ring allreduce: reduce-scatter, then allgather, chunk by chunk.
//
// Out of place, the contributions are read straight from `send` and the
// partial sums land in `recv`, where incoming chunks are received directly.
// In place (or with a prescale, applied to `recv` first) incoming chunks go
// to window-many scratch slots. Each chunk's final value is computed once,
// on the rank that owns its segment, postscaled there and then passed on,
// so every rank ends with the same bits.
#include "../common/local_steps.h"
#include "../common/prologue.h"
#include "phases.h"
#include "ring.h"

namespace hvd::reducers::ring {

void build_allreduce(hvd_task_s& t, const Collective& c, const Options& o) {
  if (allreduce_without_messages(t, c, "ring")) return;
  Schedule& s = t.schedule;
  const bool in_place = c.send == c.recv;
  const size_t n = (size_t)c.size;
  t.offsets.resize(n);
  t.lengths.resize(n);
  for (size_t k = 0; k < n; ++k) {
    t.offsets[k] = part_offset(c.count, n, k);
    t.lengths[k] = part_length(c.count, n, k);
  }
  const RingLayout L(c, t.offsets.data(), t.lengths.data(), o.chunk_bytes,
                     2 * (uint32_t)n - 2);
  const size_t C = L.chunks;
  t.window.reset(reduce_scatter_slots(L, o.pipeline_depth));
  t.send_window.reset((size_t)o.pipeline_depth);

  const bool prescaled = c.prescale != 1.0;
  const bool direct = !in_place && !prescaled;
  std::vector<Op>& ready = t.ops[3];
  if (prescaled) {
    ready.assign(n * C, Schedule::kNone);
    for (int32_t k = 0; k < (int32_t)n; ++k) {
      for (size_t ch = 0; ch < C; ++ch) {
        const size_t len = L.chunk_length(k, ch);
        if (len == 0) continue;
        const size_t at = c.bytes(L.chunk_start(k, ch));
        ready[k * C + ch] = copy_and_scale(s, c.recv + at, c.send + at, len,
                                           c.esize, c.prescale, 1.0, len);
      }
    }
  }
  const int32_t owned = L.segment(c.rank + 1);
  ReduceScatterPhase rs;
  rs.shift = 0;
  rs.local = direct ? c.send : c.recv;
  rs.local_ready = prescaled ? ready.data() : nullptr;
  rs.partial = c.recv;
  rs.result = c.recv + c.bytes(t.offsets[owned]);
  rs.slots = direct ? nullptr
                    : static_cast<uint8_t*>(
                          t.lease(t.window.depth() * c.bytes(L.chunk_elems)));
  rs.postscale = c.postscale;
  rs.first_step = 0;
  std::vector<Op>& done = t.ops[1];
  std::vector<Op>& sends = t.ops[2];
  done.assign(C, Schedule::kNone);
  sends.assign((n - 1) * C, Schedule::kNone);
  reduce_scatter_phase(t, L, rs, done.data(), sends.data());

  // A receive of the allgather overwrites what the reduce-scatter sent
  // from the same place at the same step number (only the first step of an
  // out-of-place allreduce sent from `send` instead). The ring's data flow
  // already orders the two; the edge keeps that from being load-bearing.
  if (direct) {
    for (size_t ch = 0; ch < C; ++ch) sends[ch] = Schedule::kNone;
  }
  AllgatherPhase ag;
  ag.first = owned;
  ag.buffer = c.recv;
  ag.first_ready = done.data();
  ag.hazard = sends.data();
  ag.first_step = (uint32_t)n - 1;
  allgather_phase(t, L, ag);
}

}  // namespace hvd::reducers::ring
