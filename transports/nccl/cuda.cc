#include "cuda.h"

#include "horovod_plugin/boundary.h"

namespace hvd_nccl {

std::string cuda_error_text(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + ": " +
         cudaGetErrorString(error);
}

int cuda_device_count(std::string* why) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    if (why != nullptr) *why = "cudaGetDeviceCount: " + cuda_error_text(error);
    cudaGetLastError();  // clear the sticky error for later calls
    return 0;
  }
  if (count == 0 && why != nullptr) *why = "cudaGetDeviceCount found none";
  return count;
}

void cuda_check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    hvd_plugin::fail(HVD_ERR_SYSTEM, std::string("nccl: ") + what + ": " +
                                         cuda_error_text(error));
  }
}

}  // namespace hvd_nccl
