// The few CUDA runtime calls the nccl transport makes, with messages.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace hvd_nccl {

// CUDA devices usable here; 0 with the reason in `why` when there are none
// (no driver, no device).
int cuda_device_count(std::string* why);

// "cudaErrorNoDevice: no CUDA-capable device is detected".
std::string cuda_error_text(cudaError_t error);

// Throws a Failure (HVD_ERR_SYSTEM) naming `what` when `error` is not
// cudaSuccess.
void cuda_check(cudaError_t error, const char* what);

}  // namespace hvd_nccl
