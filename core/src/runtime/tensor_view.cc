#include "runtime/tensor_view.h"

#include "common/error.h"
#include "device/device.h"
#include "runtime/agreement.h"

namespace hvd::runtime {

hvd_dtype dtype_from_dl(hvd_dl_dtype dl) {
  for (hvd_dtype d = 0; d < HVD_DTYPE_COUNT; ++d) {
    const hvd_dl_dtype mine = dl_dtype(d);
    if (dl.code == mine.code && dl.bits == mine.bits && dl.lanes == mine.lanes) {
      return d;
    }
  }
  return -1;
}

namespace {

// `name()` gives the descriptor's name for an error message: built only
// when one is thrown.
template <typename Name>
TensorView checked_view(const hvd_tensor& t, const Name& name) {
  auto invalid = [&](const std::string& why) {
    return Error(HVD_ERR_INVALID_ARGUMENT, name() + ": " + why);
  };
  if (!HVD_HAS_FIELD(&t, hvd_tensor, byte_offset)) {
    throw invalid("descriptor of " + std::to_string(t.struct_size) +
                  " bytes is too small (struct_size not set?)");
  }
  TensorView v;
  v.dtype = dtype_from_dl(t.dtype);
  if (v.dtype < 0) {
    throw invalid("unsupported dtype (code " + std::to_string(t.dtype.code) +
                  ", " + std::to_string(t.dtype.bits) + " bits, " +
                  std::to_string(t.dtype.lanes) + " lanes)");
  }
  if (t.ndim < 0 || (t.ndim > 0 && !t.shape)) {
    throw invalid("ndim " + std::to_string(t.ndim) + " without a shape");
  }
  v.shape.assign(t.shape, t.shape + t.ndim);
  const uint64_t esize = dtype_size(v.dtype);
  uint64_t elements = 1;
  for (int64_t d : v.shape) {
    if (d < 0)
      throw invalid("negative dimension in shape " + shape_text(v.shape));
    if (d != 0 && elements > UINT64_MAX / esize / static_cast<uint64_t>(d)) {
      throw invalid("shape " + shape_text(v.shape) + " is too large");
    }
    elements *= static_cast<uint64_t>(d);
  }
  v.elements = elements;
  v.bytes = elements * esize;
  if (t.strides && elements > 1) {
    int64_t expected = 1;
    for (int32_t d = t.ndim - 1; d >= 0; --d) {
      if (v.shape[d] != 1 && t.strides[d] != expected) {
        std::vector<int64_t> strides(t.strides, t.strides + t.ndim);
        throw invalid("non-contiguous tensor (shape " + shape_text(v.shape) +
                      ", strides " + shape_text(strides) +
                      "): only compact row-major tensors are accepted; make "
                      "it contiguous first");
      }
      expected *= v.shape[d];
    }
  }
  if (t.device.kind != HVD_MEM_HOST) {
    if (t.device.kind != HVD_MEM_CUDA) {
      throw Error(HVD_ERR_UNSUPPORTED,
                  name() + ": memory kind " + std::to_string(t.device.kind) +
                      " is not supported (host and CUDA memory only)");
    }
    std::string why = device_unusable(t.device);
    if (!why.empty()) throw Error(HVD_ERR_UNSUPPORTED, name() + ": " + why);
  }
  v.device = t.device;
  if (elements > 0 && !t.data) throw invalid("null data with elements");
  v.data = static_cast<uint8_t*>(t.data);
  if (v.data) v.data += t.byte_offset;
  return v;
}

}  // namespace

TensorView view_tensor(const hvd_tensor& t, const std::string& what) {
  return checked_view(t, [&] { return what; });
}

TensorView view_tensor(const hvd_tensor& t, const char* collective,
                       const std::string& op_name, const char* role,
                       int32_t index) {
  return checked_view(t, [&] {
    return std::string(collective) + " '" + op_name + "' " + role + " " +
           std::to_string(index);
  });
}

hvd_tensor describe_tensor(const TensorView& v) {
  hvd_tensor t{};
  t.struct_size = sizeof(hvd_tensor);
  t.data = v.data;
  t.device = v.device;
  t.ndim = static_cast<int32_t>(v.shape.size());
  t.dtype = dl_dtype(v.dtype);
  t.shape = v.shape.empty() ? nullptr : v.shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
  return t;
}

}  // namespace hvd::runtime
