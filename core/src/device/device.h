// The core's device layer, offered to plugins as hvd_device_api: host
// memory always; CUDA loaded on demand (dlopen of libcudart) so the core runs
// where no driver exists; a "fake device" with stream and event semantics on
// host memory for tests of ordering without a GPU.
#pragma once

#include "horovod/host.h"

namespace hvd {

// The process-wide device layer table.
const hvd_device_api* device_api();

// Host reduction kernels, vectorised per dtype: dst = a op b. fp16 and bf16
// are computed in float and rounded to nearest even. op in SUM, MIN, MAX,
// PRODUCT; bool treats SUM/MAX as logical or, PRODUCT/MIN as logical and.
void reduce_host(hvd_dtype dtype, hvd_reduce_op op, void* dst, const void* a,
                 const void* b, size_t count);
void scale_host(hvd_dtype dtype, void* buf, size_t count, double factor);
size_t dtype_size(hvd_dtype dtype);
const char* dtype_name(hvd_dtype dtype);
const char* op_name(hvd_reduce_op op);

// Large copies: glibc's memcpy falls back to cached stores up to a
// non-temporal threshold derived from a huge reported L3, which halves the
// bandwidth of 64-128 MiB copies; this routine uses streaming stores past a
// sane threshold.
void copy_large(void* dst, const void* src, size_t bytes);

}  // namespace hvd
