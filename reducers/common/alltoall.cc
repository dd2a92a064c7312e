#include "alltoall.h"

#include <algorithm>

#include "local_steps.h"

namespace hvd::reducers {

using Op = Schedule::Op;

void build_pairwise_alltoall(hvd_task_s& t, const Collective& c, size_t depth) {
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
  const bool windowed = depth > 0;
  if (windowed) t.window.reset(depth);
  for (int32_t step = 1; step < n; ++step) {
    const int32_t to = (r + step) % n, from = (r - step + n) % n;
    const size_t slot = windowed ? t.window.take() : 0;
    const Op slot_free =
        windowed ? t.window.previous_release(slot) : Schedule::kNone;
    const Op exchanged = windowed ? s.join() : Schedule::kNone;
    if (c.send_counts[to] > 0) {
      const Op sent = s.send(to, source + c.bytes(c.send_displs[to]),
                             c.bytes(c.send_counts[to]), (uint32_t)step);
      s.after(sent, {source_ready, slot_free});
      if (windowed) s.after(exchanged, sent);
    }
    if (c.counts[from] > 0) {
      const Op received = s.recv(from, c.recv + c.bytes(c.displs[from]),
                                 c.bytes(c.counts[from]), (uint32_t)step);
      s.after(received, {source_ready, slot_free});
      if (windowed) s.after(exchanged, received);
    }
    if (windowed) t.window.release(slot, exchanged);
  }
}

}  // namespace hvd::reducers
