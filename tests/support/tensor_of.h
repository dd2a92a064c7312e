// A tensor descriptor over memory the test owns: compact row-major, `ndim`
// dimensions of `shape` (which must outlive it), on `device`.
#pragma once

#include <cstdint>

#include "horovod/tensor.h"
#include "horovod_plugin/enums.h"

namespace hvd_test {

inline hvd_tensor tensor_of(void* data, hvd_dtype dtype, const int64_t* shape,
                            int32_t ndim,
                            hvd_device device = {HVD_MEM_HOST, 0}) {
  hvd_tensor t{};
  t.struct_size = sizeof t;
  t.data = data;
  t.device = device;
  t.ndim = ndim;
  t.dtype = hvd_plugin::dl_dtype(dtype);
  t.shape = ndim > 0 ? shape : nullptr;
  return t;
}

}  // namespace hvd_test
