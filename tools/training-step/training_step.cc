#include "training_step.h"

#include <algorithm>
#include <cmath>

namespace hvd_step {

std::vector<TensorSpec> backward_pass(int count, int64_t min_bytes,
                                      int64_t max_bytes) {
  std::vector<TensorSpec> specs;
  specs.reserve(static_cast<size_t>(std::max(count, 0)));
  const double ratio = static_cast<double>(max_bytes) / min_bytes;
  for (int k = count - 1; k >= 0; --k) {
    const double bytes =
        min_bytes * std::pow(ratio, count > 1 ? k / double(count - 1) : 0.0);
    specs.push_back({std::max<int64_t>(1, static_cast<int64_t>(bytes / 4)),
                     "grad." + std::to_string(k)});
  }
  return specs;
}

TrainingStep::TrainingStep(std::vector<TensorSpec> tensors, hvd_reduce_op op,
                           int rank)
    : specs_(std::move(tensors)), rank_(rank) {
  const size_t n = specs_.size();
  data_.resize(n);
  shapes_.resize(n);
  inputs_.resize(n);
  ops_.resize(n);
  handles_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    data_[i].assign(static_cast<size_t>(specs_[i].elements), 0.0f);
    shapes_[i] = specs_[i].elements;
    bytes_ += static_cast<uint64_t>(specs_[i].elements) * 4;
    hvd_tensor& t = inputs_[i];
    t = hvd_tensor{};
    t.struct_size = sizeof t;
    t.data = data_[i].data();
    t.device = hvd_device{HVD_MEM_HOST, 0};
    t.ndim = 1;
    t.dtype = {HVD_DL_FLOAT, 32, 1};
    t.shape = &shapes_[i];
    hvd_op& o = ops_[i];
    o = hvd_op{};
    o.struct_size = sizeof o;
    o.collective = HVD_COLL_ALLREDUCE;
    o.op = op;
    o.name = specs_[i].name.c_str();
    o.tensor_count = 1;
    o.inputs = &inputs_[i];
  }
}

StepResult TrainingStep::run(int64_t timeout_ms) {
  StepResult result;
  size_t enqueued = 0;
  for (; enqueued < ops_.size(); ++enqueued) {
    const hvd_status s = hvd_enqueue(&ops_[enqueued], &handles_[enqueued]);
    if (s != HVD_OK) {
      result = {s, specs_[enqueued].name + ": hvd_enqueue on rank " +
                       std::to_string(rank_) + ": " + hvd_last_error()};
      break;
    }
  }
  for (size_t i = 0; i < enqueued; ++i) {
    const hvd_status s = hvd_wait(handles_[i], timeout_ms);
    if (s != HVD_OK && result.ok()) {
      result = {s, specs_[i].name + " on rank " + std::to_string(rank_) + ": " +
                       hvd_handle_message(handles_[i])};
    }
    hvd_release(handles_[i]);
  }
  return result;
}

}  // namespace hvd_step
