#include "op_state.h"

#include <utility>

#include "dtypes.h"
#include "status_codes.h"

namespace hvd::tf {
namespace {

// TensorFlow hands compute_async a pointer to its ComputeAsync's by-value
// std::function<void()> argument (tensorflow/c/kernels.cc defines
// TF_AsyncOpKernelDoneCallback so), which dies when compute_async returns.
// An op that ends later takes the callback over;
// TF_RunAsyncOpKernelDoneCallback then runs the moved-to function.
using DoneFunction = std::function<void()>;
static_assert(sizeof(DoneFunction) == 32,
              "TensorFlow's done callback is a libstdc++ std::function");

DoneFunction take_done(TF_AsyncOpKernelDoneCallback* done) {
  return std::move(*reinterpret_cast<DoneFunction*>(done));
}

}  // namespace

OpState::OpState(TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done,
                 const KernelConfig& config)
    : ctx_(ctx), config_(config), done_(take_done(done)) {}

OpState::~OpState() {
  for (TF_Tensor* t : held_) TF_DeleteTensor(t);
}

bool OpState::describe(TF_Tensor* tensor, hvd_tensor* out) {
  *out = hvd_tensor{};
  out->struct_size = sizeof(hvd_tensor);
  if (!to_dl_dtype(TF_TensorType(tensor), &out->dtype)) return false;
  std::vector<int64_t>& shape = shapes_.emplace_back();
  for (int d = 0; d < TF_NumDims(tensor); ++d)
    shape.push_back(TF_Dim(tensor, d));
  out->data = TF_TensorData(tensor);
  out->device = hvd_device{HVD_MEM_HOST, 0};
  out->ndim = static_cast<int32_t>(shape.size());
  out->shape = shape.empty() ? nullptr : shape.data();
  return true;
}

bool OpState::add_input(int index) {
  Status status;
  TF_Tensor* tensor = nullptr;
  TF_GetInput(ctx_, index, &tensor, status.get());
  if (!status.ok() || !tensor) {
    fail(TF_INTERNAL, std::string("cannot read input ") +
                          std::to_string(index) + ": " + status.message());
    return false;
  }
  held_.push_back(tensor);
  hvd_tensor desc;
  if (!describe(tensor, &desc)) {
    fail(TF_INVALID_ARGUMENT, "input " + std::to_string(index) +
                                  " has a dtype horovod does not support");
    return false;
  }
  inputs_.push_back(desc);
  input_shapes_.push_back(&shapes_.back());
  return true;
}

hvd_status OpState::allocate_output(int index,
                                    const std::vector<int64_t>& shape,
                                    hvd_tensor* out) {
  Status status;
  TF_DataType dtype = TF_ExpectedOutputDataType(ctx_, index);
  int64_t elements = 1;
  for (int64_t d : shape) elements *= d;
  TF_Tensor* tensor = TF_AllocateOutput(
      ctx_, index, dtype, shape.data(), static_cast<int>(shape.size()),
      static_cast<size_t>(elements) * TF_DataTypeSize(dtype), status.get());
  if (!status.ok() || !tensor) {
    message = status.message();
    return TF_GetCode(status.get()) == TF_RESOURCE_EXHAUSTED
               ? HVD_ERR_OUT_OF_MEMORY
               : HVD_ERR_SYSTEM;
  }
  held_.push_back(tensor);
  return describe(tensor, out) ? HVD_OK : HVD_ERR_INVALID_ARGUMENT;
}

bool OpState::add_output(int index, const std::vector<int64_t>& shape) {
  hvd_tensor desc;
  if (allocate_output(index, shape, &desc) != HVD_OK) {
    fail(TF_RESOURCE_EXHAUSTED,
         "cannot allocate output " + std::to_string(index) + ": " + message);
    return false;
  }
  outputs_.push_back(desc);
  return true;
}

void OpState::finish(TF_Code code, const std::string& text) {
  if (code != TF_OK) {
    Status status;
    status.set(code, text);
    TF_OpKernelContext_Failure(ctx_, status.get());
  }
  DoneFunction done = std::move(done_);
  delete this;
  TF_RunAsyncOpKernelDoneCallback(
      reinterpret_cast<TF_AsyncOpKernelDoneCallback*>(&done));
}

}  // namespace hvd::tf
