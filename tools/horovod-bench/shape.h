// How one reported size maps onto the buffers of a collective on n ranks,
// as nccl-tests counts it: the size is allreduce's and broadcast's buffer,
// allgather's output, alltoall's and reducescatter's input. Counts that must
// split evenly over the ranks are rounded down to a multiple of n (at least
// n elements).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "horovod/abi.h"

namespace hvd_bench {

struct Shape {
  hvd_collective collective = HVD_COLL_ALLREDUCE;
  hvd_dtype dtype = HVD_FLOAT32;
  int ranks = 1;
  size_t element_bytes = 4;
  size_t count = 0;       // elements of the reported buffer
  size_t send_count = 0;  // elements this rank sends (its input buffer)
  size_t recv_count = 0;  // elements of its output buffer
  size_t block = 0;       // per-rank block: allgather, alltoall, reducescatter
  uint64_t bytes() const { return count * element_bytes; }
};

Shape shape_for(hvd_collective collective, hvd_dtype dtype, int ranks,
                uint64_t bytes);

// The distinct shapes from min_bytes up to max_bytes, multiplying by
// `factor`.
std::vector<Shape> shapes_between(hvd_collective collective, hvd_dtype dtype,
                                  int ranks, uint64_t min_bytes,
                                  uint64_t max_bytes, uint64_t factor);

// nccl-tests' bus bandwidth factor for n ranks.
double bus_factor(hvd_collective collective, int ranks);

size_t element_size(hvd_dtype dtype);
const char* dtype_label(hvd_dtype dtype);

}  // namespace hvd_bench
