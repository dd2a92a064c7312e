// The two halves of the ring, shared by allreduce, allgather and
// reducescatter. The buffer is cut into one segment per rank and every
// segment into chunks; chunk c of every segment travels the ring on its
// own, so the chunks of one step overlap and a chunk may run ahead into
// the next step while another is still being reduced.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../common/collective.h"
#include "../common/schedule.h"
#include "../common/task.h"

namespace hvd::reducers::ring {

using Op = Schedule::Op;

// Segments and chunks of one ring collective.
struct RingLayout {
  int32_t size = 1, rank = 0, left = 0, right = 0;
  size_t esize = 1;
  const size_t* offset = nullptr;  // segment k starts at element offset[k]
  const size_t* length = nullptr;  // and has length[k] elements
  size_t chunk_elems = 1;          // elements per chunk
  size_t chunks = 0;               // chunks of the longest segment

  // Chunk sizes: `chunk_bytes`, made larger where needed so that the
  // `steps` steps of the collective keep distinct message tags.
  RingLayout(const Collective& c, const size_t* offset, const size_t* length,
             uint64_t chunk_bytes, uint32_t steps);
  int32_t segment(int64_t k) const {  // k modulo the ring size
    return (int32_t)(((k % size) + size) % size);
  }
  size_t chunk_start(int32_t k, size_t c) const {
    return offset[k] + c * chunk_elems;
  }
  size_t chunk_length(int32_t k, size_t c) const {
    const size_t start = c * chunk_elems;
    if (start >= length[k]) return 0;
    return length[k] - start < chunk_elems ? length[k] - start : chunk_elems;
  }
  uint32_t tag(uint32_t step, size_t c) const {
    return (uint32_t)(step * chunks + c);
  }
};

struct ReduceScatterPhase {
  // Step s (0 .. n-2) sends segment (rank - s - shift) to the right and
  // receives segment (rank - s - shift - 1) from the left, so after n-1
  // steps the rank holds segment (rank + 1 - shift) reduced over all ranks.
  int shift = 0;
  const uint8_t* local = nullptr;  // this rank's contribution, by offset
  // Per segment * chunks + chunk: the op that makes the contribution ready
  // (a prescale), or nullptr when it is ready from the start.
  const Op* local_ready = nullptr;
  uint8_t* partial = nullptr;  // partial results, by offset
  uint8_t* result = nullptr;   // the owned segment's result, by chunk
  // Window-many chunk buffers for incoming data; nullptr receives straight
  // into partial / result (when nothing else lives there yet).
  uint8_t* slots = nullptr;
  Op result_after = Schedule::kNone;  // results are written after this too
  double postscale = 1.0;
  uint32_t first_step = 0;
};

// Scratch slots for the phase's receives that cannot land in place:
// `pipeline_depth`, but no more than the phase has receives.
inline size_t reduce_scatter_slots(const RingLayout& layout,
                                   int64_t pipeline_depth) {
  const size_t receives = (size_t)(layout.size - 1) * layout.chunks;
  return (size_t)pipeline_depth < receives ? (size_t)pipeline_depth : receives;
}

// Builds the phase (the task's windows limit the receives in flight and the
// sends of step 0); `done[c]` is set to the op that finishes chunk c of the
// owned segment, and sends[s * chunks + c] to the send of step s, chunk c
// (kNone where the chunk is empty).
void reduce_scatter_phase(hvd_task_s& task, const RingLayout& layout,
                          const ReduceScatterPhase& phase, Op* done, Op* sends);

struct AllgatherPhase {
  // Step a (0 .. n-2) sends segment (first - a) to the right and receives
  // segment (first - a - 1) from the left.
  int32_t first = 0;
  uint8_t* buffer = nullptr;  // every segment, by offset
  // Where step 0 reads segment `first` from (chunk c at first_source +
  // c * chunk_elems elements); nullptr: from buffer.
  const uint8_t* first_source = nullptr;
  const Op* first_ready = nullptr;  // per chunk, or nullptr
  // Per step * chunks + chunk: what must finish before that receive may
  // overwrite its place, or nullptr.
  const Op* hazard = nullptr;
  uint32_t first_step = 0;
};

void allgather_phase(hvd_task_s& task, const RingLayout& layout,
                     const AllgatherPhase& phase);

}  // namespace hvd::reducers::ring
