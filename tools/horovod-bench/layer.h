// What the timing loop needs from whatever runs the collective: ours at
// either layer, or MPI's as the peer. Every rank calls the same functions
// in the same order. Failures throw hvd::Error naming what failed (and the
// rank at fault when one is known).
#pragma once

#include <string>
#include <vector>

#include "shape.h"
#include "workload.h"

namespace hvd_bench {

class Layer {
 public:
  virtual ~Layer() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // One line for the table's header: what runs the collective.
  virtual std::string describe() const = 0;

  // Sets up the collective of `shape` on the workload's buffers.
  virtual void prepare(const Shape& shape, Workload& workload) = 0;
  // Runs it once, to completion.
  virtual void run_once() = 0;
  // What ran it last (a reducer's name, "mpi"), for the table.
  virtual std::string algorithm() const = 0;

  virtual void barrier() = 0;
  // The element-wise maximum over the ranks, on every rank.
  virtual std::vector<double> max_over_ranks(
      const std::vector<double>& mine) = 0;
};

}  // namespace hvd_bench
