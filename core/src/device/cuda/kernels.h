/*
 * The C interface of libhorovod-cuda-kernels.so: the device layer's CUDA
 * kernels, built by nvcc where CUDA is found and loaded by the core on first
 * use (cuda_kernels.h), so the core itself never links the CUDA runtime.
 *
 * Every function launches on `stream` (a cudaStream_t) on the calling
 * thread's current device and returns the cudaError_t of the launch (0:
 * queued). Nothing waits for the device.
 */
#ifndef HOROVOD_DEVICE_CUDA_KERNELS_H
#define HOROVOD_DEVICE_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change of the functions below; the core refuses another. */
#define HVD_CUDA_KERNELS_VERSION 1

/* One copy of a batch: `bytes` from `src` to `dst` (src NULL: zeros). */
typedef struct hvd_cuda_copy {
  void* dst;
  const void* src;
  uint64_t bytes;
} hvd_cuda_copy;

int hvd_cuda_kernels_version(void);

/* Every copy of `copies` (host memory, read during the call) in as few
 * launches as the kernel's parameter space allows (one per 64 copies). */
int hvd_cuda_batched_copy(const hvd_cuda_copy* copies, size_t count,
                          void* stream);

/* buf[i] = factor * buf[i], as Horovod scales on a GPU: float16 and
 * bfloat16 multiply by the factor rounded to their own format (the product
 * rounded once), float32 by the factor rounded to float, float64 in
 * double; integers in double, converted back toward zero (saturating out of
 * range, as the GPU converts); bool stays true only for a nonzero factor.
 * dtype is an hvd_dtype. Returns cudaErrorInvalidValue for an unknown one. */
int hvd_cuda_scale(int32_t dtype, void* buf, size_t count, double factor,
                   void* stream);

/* dst[i] = a[i] op b[i], op one of HVD_OP_SUM, MIN, MAX, PRODUCT, with the
 * host kernels' semantics: float16 and bfloat16 computed in float and
 * rounded to nearest even; integers wrap; bool: SUM and MAX are or, MIN and
 * PRODUCT are and. dst may be a or b. */
int hvd_cuda_reduce(int32_t dtype, int32_t op, void* dst, const void* a,
                    const void* b, size_t count, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* HOROVOD_DEVICE_CUDA_KERNELS_H */
