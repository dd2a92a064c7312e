// The factors a reducer applies for a response, as Horovod computes them:
// AVERAGE is a SUM whose postscale is divided by the set's size. A division,
// not a product with 1.0 / size: the two differ in the last bit of the
// double, and so in the results of float64 tensors.
#pragma once

#include <cstdint>

#include "horovod/abi.h"

namespace hvd::runtime {

inline hvd_reduce_op reducer_op(hvd_reduce_op op) {
  return op == HVD_OP_AVERAGE ? HVD_OP_SUM : op;
}

inline double reducer_postscale(hvd_reduce_op op, double postscale,
                                int32_t set_size) {
  return op == HVD_OP_AVERAGE ? postscale / set_size : postscale;
}

}  // namespace hvd::runtime
