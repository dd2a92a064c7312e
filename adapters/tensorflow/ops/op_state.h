// One op in flight between TensorFlow and the core: the kernel context,
// TensorFlow's done callback, the tensors handed to the core (held until the
// op ends) and the outputs allocated for it.
#pragma once

#include <tensorflow/c/kernels.h>

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "horovod/horovod.h"
#include "kernel_config.h"

namespace hvd::tf {

class OpState {
 public:
  OpState(TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done,
          const KernelConfig& config);
  ~OpState();
  OpState(const OpState&) = delete;
  OpState& operator=(const OpState&) = delete;

  const KernelConfig& config() const { return config_; }
  TF_OpKernelContext* context() const { return ctx_; }

  // Appends kernel input `index` to inputs(); false (the op failed, with TF
  // told why) for a dtype the core does not carry.
  bool add_input(int index);
  // TensorFlow output `index` of `shape`, described in *out (on failure
  // `message` says why).
  hvd_status allocate_output(int index, const std::vector<int64_t>& shape,
                             hvd_tensor* out);
  // As allocate_output, appended to outputs(); false when the op failed.
  bool add_output(int index, const std::vector<int64_t>& shape);
  // The shape of inputs()[i].
  const std::vector<int64_t>& input_shape(size_t i) const {
    return *input_shapes_[i];
  }

  std::vector<hvd_tensor>& inputs() { return inputs_; }
  std::vector<hvd_tensor>& outputs() { return outputs_; }
  std::vector<int32_t>& splits() { return splits_; }

  // Ends the op: TF is told `code` and `message` (unless TF_OK), then its
  // done callback runs. Deletes this.
  void finish(TF_Code code, const std::string& message);
  void fail(TF_Code code, const std::string& message) {
    finish(code, config_.name + ": " + message);
  }

  // For ops ended through the handle (finisher.h).
  hvd_handle* handle = nullptr;
  hvd_status status = HVD_OK;
  std::string message;

 private:
  bool describe(TF_Tensor* tensor, hvd_tensor* out);

  TF_OpKernelContext* ctx_;
  const KernelConfig& config_;
  std::function<void()> done_;
  std::vector<TF_Tensor*> held_;
  std::deque<std::vector<int64_t>> shapes_;  // stable: descriptors point in
  std::vector<const std::vector<int64_t>*> input_shapes_;
  std::vector<hvd_tensor> inputs_;
  std::vector<hvd_tensor> outputs_;
  std::vector<int32_t> splits_;
};

}  // namespace hvd::tf
