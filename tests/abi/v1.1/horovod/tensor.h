/*
 * The tensor descriptor shared by the public API and the adapter ABI:
 * DLPack's shape (data, device, dtype as code/bits/lanes, shape, strides),
 * so a framework binding fills it from a DLPack capsule field by field.
 */
#ifndef HOROVOD_TENSOR_H
#define HOROVOD_TENSOR_H

#include "horovod/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* DLPack type codes. */
enum {
  HVD_DL_INT = 0,
  HVD_DL_UINT = 1,
  HVD_DL_FLOAT = 2,
  HVD_DL_BFLOAT = 4,
  HVD_DL_BOOL = 6
};

typedef struct hvd_dl_dtype {
  uint8_t code;   /* HVD_DL_* */
  uint8_t bits;   /* 8, 16, 32, 64 */
  uint16_t lanes; /* 1; vector types are not accepted */
} hvd_dl_dtype;

typedef struct hvd_tensor {
  size_t struct_size;
  const hvd_extension* ext;
  void* data;
  hvd_device device;
  int32_t ndim;
  hvd_dl_dtype dtype;
  const int64_t* shape; /* ndim entries; NULL when ndim == 0 */
  /* In elements; NULL means compact row-major. Tensors whose strides are not
   * compact row-major are rejected with HVD_ERR_INVALID_ARGUMENT: the binding
   * makes them contiguous first. */
  const int64_t* strides;
  uint64_t byte_offset; /* added to data */
} hvd_tensor;

#ifdef __cplusplus
}
#endif

#endif /* HOROVOD_TENSOR_H */
