// The tree reducer: latency-optimal collectives for small messages, in
// about log2(n) steps. Allreduce is recursive doubling (ranks past the
// largest power of two fold into a partner first and get the result back
// at the end); broadcast a binomial tree; allgather(v) Bruck's doubling
// with blocks placed directly; barrier a dissemination barrier;
// alltoall(v) the pairwise exchange of common/alltoall.h with every
// message in flight at once; reducescatter(v) an allreduce of the whole
// input, then this rank's part.
#pragma once

#include <cstdint>

#include "../common/collective.h"
#include "../common/task.h"

namespace hvd::reducers::tree {

struct Options {
  // [reducer.tree] segment_bytes: larger messages are run as a pipeline of
  // segments of this size, so scratch stays small.
  uint64_t segment_bytes = uint64_t(4) << 20;
};

void build_allreduce(hvd_task_s& task, const Collective& c, const Options& o);
void build_broadcast(hvd_task_s& task, const Collective& c, const Options& o);
void build_allgather(hvd_task_s& task, const Collective& c);
void build_barrier(hvd_task_s& task, const Collective& c);
void build_reducescatter(hvd_task_s& task, const Collective& c,
                         const Options& o);

// Elements per segment: segment_bytes, enlarged where needed so that
// `steps_per_segment` steps per segment keep distinct message tags.
size_t segment_elems(const Collective& c, const Options& o,
                     uint32_t steps_per_segment);

}  // namespace hvd::reducers::tree
