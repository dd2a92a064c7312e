#include "phases.h"

#include <algorithm>

namespace hvd::reducers::ring {

RingLayout::RingLayout(const Collective& c, const size_t* offsets,
                       const size_t* lengths, uint64_t chunk_bytes,
                       uint32_t steps)
    : size(c.size),
      rank(c.rank),
      left((c.rank + c.size - 1) % c.size),
      right((c.rank + 1) % c.size),
      esize(c.esize),
      offset(offsets),
      length(lengths) {
  size_t longest = 0;
  for (int32_t k = 0; k < size; ++k) longest = std::max(longest, length[k]);
  // No longer than the longest segment: scratch slots are chunk-sized.
  chunk_elems =
      std::clamp<size_t>(chunk_bytes / esize, 1, std::max<size_t>(longest, 1));
  chunks = (longest + chunk_elems - 1) / chunk_elems;
  const size_t max_chunks =
      std::max<size_t>(1, Schedule::kSteps / std::max<uint32_t>(steps, 1));
  if (chunks > max_chunks) {
    chunk_elems = (longest + max_chunks - 1) / max_chunks;
    chunks = (longest + chunk_elems - 1) / chunk_elems;
  }
}

void reduce_scatter_phase(hvd_task_s& task, const RingLayout& L,
                          const ReduceScatterPhase& p, Op* done, Op* sends) {
  Schedule& s = task.schedule;
  Window& window = task.window;
  const size_t C = L.chunks, E = L.chunk_elems, esize = L.esize;
  const bool slotted = p.slots != nullptr;
  std::vector<Op>& previous = task.ops[0];  // per chunk: what step s sends
  previous.assign(C, Schedule::kNone);
  auto local_ready = [&](int32_t k, size_t c) {
    return p.local_ready != nullptr ? p.local_ready[k * C + c]
                                    : Schedule::kNone;
  };
  for (int32_t step = 0; step + 1 < L.size; ++step) {
    const int32_t send_seg = L.segment(L.rank - step - p.shift);
    const int32_t recv_seg = L.segment(L.rank - step - p.shift - 1);
    const bool last = step + 2 == L.size;
    const uint32_t tag_step = p.first_step + (uint32_t)step;
    for (size_t c = 0; c < C; ++c) {
      const size_t send_len = L.chunk_length(send_seg, c);
      Op sent = Schedule::kNone;
      if (send_len > 0) {
        const size_t at = L.chunk_start(send_seg, c) * esize;
        const uint8_t* from = step == 0 ? p.local + at : p.partial + at;
        sent = s.send(L.right, from, send_len * esize, L.tag(tag_step, c));
        if (step == 0) {
          s.after(sent, local_ready(send_seg, c));
          const size_t slot = task.send_window.take();
          s.after(sent, task.send_window.previous_release(slot));
          task.send_window.release(slot, sent);
        } else {
          s.after(sent, previous[c]);
        }
      }
      sends[step * C + c] = sent;

      const size_t recv_len = L.chunk_length(recv_seg, c);
      if (last) done[c] = Schedule::kNone;
      if (recv_len == 0) continue;
      const size_t at = L.chunk_start(recv_seg, c) * esize;
      uint8_t* out = last ? p.result + c * E * esize : p.partial + at;
      // A receive into a slot waits for the slot; one straight into its
      // place is posted at once.
      const size_t slot = slotted ? window.take() : 0;
      uint8_t* in = slotted ? p.slots + slot * E * esize : out;
      const Op received =
          s.recv(L.left, in, recv_len * esize, L.tag(tag_step, c));
      if (slotted) s.after(received, window.previous_release(slot));
      // Incoming (the ranks before this one) first, then this rank's part.
      Op finished = s.reduce(out, in, p.local + at, recv_len);
      s.after(finished, {received, local_ready(recv_seg, c)});
      if (last) s.after(finished, p.result_after);
      if (slotted) window.release(slot, finished);
      if (last && p.postscale != 1.0) {
        const Op scaled = s.scale(out, recv_len, p.postscale);
        s.after(scaled, finished);
        finished = scaled;
      }
      previous[c] = finished;
      if (last) done[c] = finished;
    }
  }
}

void allgather_phase(hvd_task_s& task, const RingLayout& L,
                     const AllgatherPhase& p) {
  Schedule& s = task.schedule;
  const size_t C = L.chunks, E = L.chunk_elems, esize = L.esize;
  std::vector<Op>& previous = task.ops[0];  // per chunk: what step a sends
  previous.assign(C, Schedule::kNone);
  for (int32_t step = 0; step + 1 < L.size; ++step) {
    const int32_t send_seg = L.segment(p.first - step);
    const int32_t recv_seg = L.segment(p.first - step - 1);
    const uint32_t tag_step = p.first_step + (uint32_t)step;
    for (size_t c = 0; c < C; ++c) {
      const size_t send_len = L.chunk_length(send_seg, c);
      if (send_len > 0) {
        const uint8_t* from =
            step == 0 && p.first_source != nullptr
                ? p.first_source + c * E * esize
                : p.buffer + L.chunk_start(send_seg, c) * esize;
        const Op sent =
            s.send(L.right, from, send_len * esize, L.tag(tag_step, c));
        if (step == 0) {
          if (p.first_ready != nullptr) s.after(sent, p.first_ready[c]);
          const size_t slot = task.send_window.take();
          s.after(sent, task.send_window.previous_release(slot));
          task.send_window.release(slot, sent);
        } else {
          s.after(sent, previous[c]);
        }
      }
      const size_t recv_len = L.chunk_length(recv_seg, c);
      if (recv_len == 0) continue;
      // Posted at once: the data lands in its final place, so a receive
      // needs no slot, only the hazard's order.
      const Op received =
          s.recv(L.left, p.buffer + L.chunk_start(recv_seg, c) * esize,
                 recv_len * esize, L.tag(tag_step, c));
      if (p.hazard != nullptr) s.after(received, p.hazard[step * C + c]);
      previous[c] = received;
    }
  }
}

}  // namespace hvd::reducers::ring
