// Ring broadcast: a pipelined chain from the root. Each rank receives a
// chunk from the rank before it and forwards it to the next while the
// following chunks are still arriving.
#include <algorithm>

#include "../common/schedule.h"
#include "phases.h"
#include "ring.h"

namespace hvd::reducers::ring {

void build_broadcast(hvd_task_s& t, const Collective& c, const Options& o) {
  if (c.count == 0 || c.size == 1) return;
  Schedule& s = t.schedule;
  const int32_t n = c.size;
  const int32_t position = (c.rank - c.root + n) % n;
  const int32_t previous = (c.rank - 1 + n) % n, next = (c.rank + 1) % n;
  size_t chunk = std::max<size_t>(1, o.chunk_bytes / c.esize);
  if ((c.count + chunk - 1) / chunk > Schedule::kSteps) {
    chunk = (c.count + Schedule::kSteps - 1) / Schedule::kSteps;
  }
  t.send_window.reset((size_t)o.pipeline_depth);
  for (size_t at = 0, tag = 0; at < c.count; at += chunk, ++tag) {
    const size_t len = std::min(chunk, c.count - at);
    uint8_t* data = c.recv + c.bytes(at);
    Op received = Schedule::kNone;
    if (position > 0) {
      received = s.recv(previous, data, c.bytes(len), (uint32_t)tag);
    }
    if (position < n - 1) {
      const Op sent = s.send(next, data, c.bytes(len), (uint32_t)tag);
      s.after(sent, received);
      if (position == 0) {
        const size_t slot = t.send_window.take();
        s.after(sent, t.send_window.previous_release(slot));
        t.send_window.release(slot, sent);
      }
    }
  }
}

}  // namespace hvd::reducers::ring
