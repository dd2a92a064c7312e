// Writes a reducer's scored ranges into the caller's array (see the
// score() call of hvd_reducer_api): checks the arguments, and drops what
// does not fit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "horovod/reducer.h"

namespace hvd::reducers {

class ScoreList {
 public:
  // False (with last_error set) when count or ranges is NULL.
  bool open(const char* reducer, hvd_score_range* ranges, size_t* count);
  void add(uint64_t min_bytes, uint64_t max_bytes, int32_t score);

 private:
  hvd_score_range* ranges_ = nullptr;
  size_t* count_ = nullptr;
  size_t room_ = 0;
};

// Whether a reducer that reduces with the device layer's kernels runs `op`
// for `coll`: every op but ADASUM (collectives that do not reduce ignore
// the op).
inline bool kernel_op(hvd_collective coll, hvd_reduce_op op) {
  const bool reduces =
      coll == HVD_COLL_ALLREDUCE || coll == HVD_COLL_REDUCESCATTER;
  return !reduces || (op >= HVD_OP_SUM && op <= HVD_OP_PRODUCT);
}

inline bool is_power_of_two(int32_t n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace hvd::reducers
