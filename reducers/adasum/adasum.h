// The adasum reducer: Horovod's Adasum (op HVD_OP_ADASUM) for host tensors
// of float16, float32 and float64 on a power-of-two team, by recursive
// vector halving with distance doubling.
//
// At level 2^i (i = 0, 1, ...) rank r pairs with r ^ 2^i: the two hold the
// same range of the buffer; the one with bit i clear keeps the first half
// and sends the second, the other keeps the second. On its half each rank
// computes the partial dot product a.b and squared norms |a|^2, |b|^2 of the
// left partner's vector a (bit i clear) and the right one's b; the partials
// are summed over the 2^(i+1) ranks that hold the pieces of a and b (a
// recursive-doubling allreduce of three doubles, lower rank first, so every
// member holds the same bits), and each rank replaces its half with
//   (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
// (a coefficient is 1 where its norm is below 1e-8). After log2 n levels
// the halves travel back in reverse order. The result is Horovod's: the
// pairwise Adasum combination applied up a binary tree over the ranks.
//
// The buffer is one vector: the runtime does not fuse Adasum tensors, so
// each tensor gets its own coefficients, as in Horovod.
#pragma once

#include "../common/collective.h"
#include "../common/task.h"

namespace hvd::reducers::adasum {

// Throws Failure(HVD_ERR_UNSUPPORTED) for a team that is not a power of
// two or a dtype without kernels.
void build_allreduce(hvd_task_s& task, const Collective& c);

}  // namespace hvd::reducers::adasum
