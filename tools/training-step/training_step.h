// One step of a training-shaped job through the C API, shared by
// horovod-soak and horovod-bench --step: every tensor of the step is
// enqueued as an in-place float32 allreduce, in the order a backward pass
// produces gradients, then all are waited for and released.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "horovod/horovod.h"

namespace hvd_step {

struct TensorSpec {
  int64_t elements;  // float32
  std::string name;
};

// `count` tensors "grad.<k>" of min_bytes * (max_bytes/min_bytes)^(k/(n-1))
// bytes, k from count-1 down to 0: the last layer's gradient first.
std::vector<TensorSpec> backward_pass(int count, int64_t min_bytes,
                                      int64_t max_bytes);

struct StepResult {
  hvd_status status = HVD_OK;
  std::string message;  // what failed, naming the tensor and the rank
  bool ok() const { return status == HVD_OK; }
};

class TrainingStep {
 public:
  TrainingStep(std::vector<TensorSpec> tensors, hvd_reduce_op op, int rank);
  TrainingStep(const TrainingStep&) = delete;
  TrainingStep& operator=(const TrainingStep&) = delete;

  // Enqueues every tensor in submission order, then waits for each (at
  // most `timeout_ms`) and releases it. Stops at the first failed enqueue
  // (the ones enqueued are still waited for).
  StepResult run(int64_t timeout_ms);

  // The tensors' data, in submission order: set inputs, read results.
  std::vector<std::vector<float>>& data() { return data_; }
  const std::vector<TensorSpec>& tensors() const { return specs_; }
  uint64_t bytes() const { return bytes_; }

 private:
  std::vector<TensorSpec> specs_;
  int rank_;
  std::vector<std::vector<float>> data_;
  std::vector<int64_t> shapes_;
  std::vector<hvd_tensor> inputs_;
  std::vector<hvd_op> ops_;
  std::vector<hvd_handle*> handles_;
  uint64_t bytes_ = 0;
};

}  // namespace hvd_step
