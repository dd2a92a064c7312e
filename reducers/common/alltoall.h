// Pairwise alltoall(v), shared by the ring and the tree: at step s every
// rank sends to rank + s and receives from rank - s (so no rank is
// everyone's first), with at most `depth` steps in flight; depth 0 posts
// every step at once (one message latency for small messages). In place,
// the input is copied aside first.
#pragma once

#include <cstddef>

#include "collective.h"
#include "task.h"

namespace hvd::reducers {

void build_pairwise_alltoall(hvd_task_s& task, const Collective& c,
                             size_t depth);

}  // namespace hvd::reducers
