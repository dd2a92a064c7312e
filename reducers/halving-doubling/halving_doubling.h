// The halving-doubling reducer: Rabenseifner's allreduce for the middle
// sizes. A reduce-scatter by recursive halving (log2 p steps, each
// exchanging half of what is left) and an allgather by recursive doubling
// (the same steps in reverse), so every rank sends 2(p-1)/p of the data in
// 2 log2 p steps instead of the ring's 2(n-1). Ranks past the largest power
// of two p fold their data into a partner first and get the result back at
// the end (as MPICH does). Reducescatter(v) is the ring's job.
#pragma once

#include <cstdint>

#include "../common/collective.h"
#include "../common/task.h"

namespace hvd::reducers::halving_doubling {

struct Options {
  // [reducer.halving-doubling] chunk_bytes: each step's exchange is cut
  // into chunks of this size so reductions overlap the transfers.
  uint64_t chunk_bytes = uint64_t(256) << 10;
  // [reducer.halving-doubling] pipeline_depth: chunks received ahead.
  int64_t pipeline_depth = 4;
};

void build_allreduce(hvd_task_s& task, const Collective& c, const Options& o);

}  // namespace hvd::reducers::halving_doubling
