// The ring reducer: bandwidth-optimal collectives for large messages.
// Allreduce is a reduce-scatter then an allgather around the ring (each
// rank sends 2(n-1)/n of the data), every segment cut into chunks that
// are pipelined through the steps; allgather(v) and reducescatter(v) are
// the two halves alone; broadcast is a pipelined chain from the root;
// alltoall(v) the pairwise exchange of common/alltoall.h, pipeline_depth
// steps in flight; barrier a token passed around twice.
#pragma once

#include <cstdint>

#include "../common/collective.h"
#include "../common/task.h"

namespace hvd::reducers::ring {

struct Options {
  uint64_t chunk_bytes = uint64_t(1) << 20;  // [reducer.ring] chunk_bytes
  // [reducer.ring] pipeline_depth: scratch slots for receives that cannot
  // land in place, and sends of the first step in flight. Receives into
  // their final place are all posted at once.
  int64_t pipeline_depth = 4;
};

void build_allreduce(hvd_task_s& task, const Collective& c, const Options& o);
void build_allgather(hvd_task_s& task, const Collective& c, const Options& o);
void build_reducescatter(hvd_task_s& task, const Collective& c,
                         const Options& o);
void build_broadcast(hvd_task_s& task, const Collective& c, const Options& o);
void build_barrier(hvd_task_s& task, const Collective& c);

}  // namespace hvd::reducers::ring
