// The arguments of one collective as the algorithms read them: checked,
// with the op reduced to a kernel op (AVERAGE arrives as SUM with 1/n in
// postscale; one that still says AVERAGE is treated the same way) and the
// team at hand.
#pragma once

#include <cstddef>
#include <cstdint>

#include "horovod/reducer.h"
#include "horovod_plugin/enums.h"

namespace hvd::reducers {

using hvd_plugin::collective_name;
using hvd_plugin::dtype_name;
using hvd_plugin::dtype_size;  // 0 for an unknown dtype

struct Collective {
  hvd_collective kind = HVD_COLL_BARRIER;
  hvd_dtype dtype = HVD_UINT8;
  hvd_reduce_op op = HVD_OP_SUM;  // SUM, MIN, MAX or PRODUCT
  size_t esize = 1;
  const uint8_t* send = nullptr;
  uint8_t* recv = nullptr;
  size_t count = 0;
  const size_t* counts = nullptr;
  const size_t* displs = nullptr;
  const size_t* send_counts = nullptr;
  const size_t* send_displs = nullptr;
  int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  hvd_device device{HVD_MEM_HOST, 0};
  const hvd_team* team = nullptr;
  int32_t rank = 0;
  int32_t size = 1;

  size_t bytes(size_t elements) const { return elements * esize; }
};

// Throws Failure: HVD_ERR_INVALID_ARGUMENT for malformed arguments,
// HVD_ERR_UNSUPPORTED for what the built-in reducers do not do (memory
// other than host, ADASUM).
Collective read_collective(const hvd_coll_args* args, const hvd_p2p_api* api,
                           hvd_p2p* p2p);

// [lo, hi) overlap test on byte ranges.
inline bool overlaps(const void* a, size_t a_bytes, const void* b,
                     size_t b_bytes) {
  const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return a_bytes > 0 && b_bytes > 0 && x < y + b_bytes && y < x + a_bytes;
}

// Element offset and length of part k of `count` split into `parts` nearly
// equal parts (the first count % parts are one longer).
inline size_t part_offset(size_t count, size_t parts, size_t k) {
  const size_t base = count / parts, extra = count % parts;
  return k * base + (k < extra ? k : extra);
}
inline size_t part_length(size_t count, size_t parts, size_t k) {
  return count / parts + (k < count % parts ? 1 : 0);
}

}  // namespace hvd::reducers
