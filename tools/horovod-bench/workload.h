// The buffers one rank times a collective on, filled with rank-dependent
// values, and the check of what the collective left in them.
//
// Inputs are small integers (exact in every dtype for modest rank counts):
// allreduce and reducescatter sum 1 + (rank % 8) + (i % 13) over the ranks;
// allgather and alltoall move values that name the sender (and, for
// alltoall, the receiver); broadcast copies rank 0's buffer. Outputs are
// first filled with a value no collective produces, so a result that was
// never written is caught.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "shape.h"

namespace hvd_bench {

class Workload {
 public:
  // Room for the largest shape of the run; buffers are page-aligned and
  // touched once here, so timing never pays for first-touch faults.
  Workload(size_t max_send_bytes, size_t max_recv_bytes);

  // The input buffer (unused by broadcast) and the output buffer (also
  // broadcast's input on the root).
  void* send() const { return send_.get(); }
  void* recv() const { return recv_.get(); }

  void fill(const Shape& shape, int rank);
  // "" when the outputs hold the expected values; else what is wrong (the
  // first bad element and how many are bad).
  std::string check(const Shape& shape, int rank) const;

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<uint8_t, Free> send_, recv_;
};

}  // namespace hvd_bench
