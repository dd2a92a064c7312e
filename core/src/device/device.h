// The core's device layer, offered to plugins as hvd_device_api: host
// memory always; CUDA loaded on demand (dlopen of libcudart) so the core runs
// where no driver exists; a "fake device" with stream and event semantics on
// host memory for tests of ordering without a GPU.
#pragma once

#include <string>
#include <vector>

#include "device/cuda/kernels.h"
#include "horovod/host.h"
#include "horovod_plugin/enums.h"

namespace hvd {

// The process-wide device layer table.
const hvd_device_api* device_api();

// Host reduction kernels, vectorised per dtype: dst = a op b. fp16 and bf16
// are computed in float and rounded to nearest even. op in SUM, MIN, MAX,
// PRODUCT; bool treats SUM/MAX as logical or, PRODUCT/MIN as logical and.
// Integers wrap. dst may be a or b. Throws hvd::Error (invalid argument) for
// an unknown dtype or another op.
//
// scale_host, as Horovod scales on the CPU: float32 in float32 (by the
// factor rounded to float), float64 in double, fp16 and bf16 in float;
// integers in double, then truncated toward zero and wrapped to the width
// as a C++ or torch cast does; bool stays true only for a nonzero factor.
// factor 1 is a no-op.
void reduce_host(hvd_dtype dtype, hvd_reduce_op op, void* dst, const void* a,
                 const void* b, size_t count);
void scale_host(hvd_dtype dtype, void* buf, size_t count, double factor);
using hvd_plugin::dtype_name;
using hvd_plugin::dtype_size;
using hvd_plugin::op_name;

// Large copies: glibc's memcpy falls back to cached stores up to a
// non-temporal threshold derived from a huge reported L3, which halves the
// bandwidth of 64-128 MiB copies; this routine uses streaming stores past a
// sane threshold.
// dst and src should not overlap (if they do, this is memmove).
void copy_large(void* dst, const void* src, size_t bytes);
// Copies of at least this many bytes use streaming stores (SIZE_MAX: never).
size_t copy_large_threshold();

// Runs fn(arg) in stream order: on the stream's worker for a host stream
// (the fake device), through cudaLaunchHostFunc for a CUDA stream, at once
// on the calling thread for a NULL stream. fn must not call the device
// layer for the same stream.
hvd_status launch_host_func(hvd_stream stream, void (*fn)(void*), void* arg);

// One copy of a batch: `bytes` from `src` to `dst` (src NULL: zeros).
using CopyEntry = hvd_cuda_copy;

// Every copy of `copies` in one launch ordered on `stream`, both sides on
// `device`: one kernel (per 64 copies) on a CUDA stream, one work item on
// a fake-device stream, at once on the calling thread for a NULL stream and
// host memory. A copy that fails on a stream fails the stream (its later
// events report it). Test knob of the fake device:
// HOROVOD_FAKE_DEVICE_FAIL_COPY=N fails the N-th copy (from 1) this process
// runs on fake-device streams; the copies before it land.
hvd_status batched_copy(hvd_device device, const std::vector<CopyEntry>& copies,
                        hvd_stream stream);

// The device a stream of the device layer orders work on (a fake-device
// stream: host device 0); host device 0 for the NULL stream.
hvd_device stream_device(hvd_stream stream);

// "" when the device layer runs the batched copy and scale kernels on
// `device`; else why not ("CUDA kernels not found (...)").
std::string fusion_kernels_unavailable(hvd_device device);

// "" when tensors on `device` can be used here; else why not ("CUDA device
// 0 is not usable: no CUDA device"). Host device 0 is always usable.
std::string device_unusable(hvd_device device);

// Waits for copies issued by memcpy_async on `stream` to land. A NULL stream
// with a CUDA device waits for the device's legacy default stream, where
// synchronous copies from pageable memory may still be in flight.
hvd_status synchronize_copies(hvd_device device, hvd_stream stream);

}  // namespace hvd
