// Checked views of the caller's tensor descriptors (tensor.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "horovod/tensor.h"
#include "horovod_plugin/enums.h"

namespace hvd::runtime {

struct TensorView {
  uint8_t* data = nullptr;  // data + byte_offset
  hvd_device device{HVD_MEM_HOST, 0};
  hvd_dtype dtype = HVD_UINT8;
  std::vector<int64_t> shape;
  uint64_t elements = 0;
  uint64_t bytes = 0;
};

// The hvd_dtype of a DLPack dtype, or -1 when it has none (uint32, vector
// lanes, ...); dl_dtype() is the way back.
hvd_dtype dtype_from_dl(hvd_dl_dtype dl);
using hvd_plugin::dl_dtype;

// Checks one descriptor and makes its view. `what` names it in errors
// ("allreduce 'grad' input 0"). Throws hvd::Error HVD_ERR_INVALID_ARGUMENT
// for an unknown dtype, a negative dimension, an element count whose bytes
// overflow 64 bits, a null data pointer with elements, or strides that are
// not compact row-major (dimensions of extent 1 may have any stride);
// HVD_ERR_UNSUPPORTED for memory other than host and CUDA memory, and for
// CUDA memory on a device that is not usable here (no runtime, no driver,
// no such device: the message says which).
TensorView view_tensor(const hvd_tensor& tensor, const std::string& what);
// The same, naming it "<collective> '<op_name>' <role> <index>" (built
// only for an error: enqueue checks every tensor of every op).
TensorView view_tensor(const hvd_tensor& tensor, const char* collective,
                       const std::string& op_name, const char* role,
                       int32_t index);

// A descriptor of `view` (data, dtype, shape pointing into `view`).
hvd_tensor describe_tensor(const TensorView& view);

}  // namespace hvd::runtime
