#include "device/cuda_runtime.h"

#include <dlfcn.h>

#include "common/log.h"

namespace hvd {
namespace {

// The unversioned name first (a toolkit's or a framework's choice), then
// the sonames of recent major versions.
const char* const kLibraryNames[] = {"libcudart.so", "libcudart.so.13",
                                     "libcudart.so.12", "libcudart.so.11.0"};

template <typename Fn>
bool resolve(void* library, const char* name, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(dlsym(library, name));
  if (*out == nullptr) {
    if (!missing->empty()) *missing += ", ";
    *missing += name;
  }
  return *out != nullptr;
}

}  // namespace

const CudaRuntime& CudaRuntime::get() {
  static const CudaRuntime runtime;
  return runtime;
}

CudaRuntime::CudaRuntime() {
  std::string tried;
  for (const char* name : kLibraryNames) {
    library_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library_ != nullptr) break;
    const char* why = dlerror();
    if (!tried.empty()) tried += "; ";
    tried += why != nullptr ? why : name;
  }
  if (library_ == nullptr) {
    reason_ = "CUDA runtime not found (" + tried + ")";
    HVD_LOG(DEBUG) << reason_;
    return;
  }
  std::string missing;
  resolve(library_, "cudaGetDeviceCount", &GetDeviceCount, &missing);
  resolve(library_, "cudaGetDevice", &GetDevice, &missing);
  resolve(library_, "cudaSetDevice", &SetDevice, &missing);
  resolve(library_, "cudaGetErrorName", &GetErrorName, &missing);
  resolve(library_, "cudaGetErrorString", &GetErrorString, &missing);
  resolve(library_, "cudaStreamCreateWithFlags", &StreamCreateWithFlags,
          &missing);
  resolve(library_, "cudaStreamDestroy", &StreamDestroy, &missing);
  resolve(library_, "cudaStreamSynchronize", &StreamSynchronize, &missing);
  resolve(library_, "cudaStreamWaitEvent", &StreamWaitEvent, &missing);
  resolve(library_, "cudaEventCreateWithFlags", &EventCreateWithFlags,
          &missing);
  resolve(library_, "cudaEventDestroy", &EventDestroy, &missing);
  resolve(library_, "cudaEventRecord", &EventRecord, &missing);
  resolve(library_, "cudaEventQuery", &EventQuery, &missing);
  resolve(library_, "cudaEventSynchronize", &EventSynchronize, &missing);
  resolve(library_, "cudaMalloc", &Malloc, &missing);
  resolve(library_, "cudaFree", &Free, &missing);
  resolve(library_, "cudaMemcpy", &Memcpy, &missing);
  resolve(library_, "cudaMemcpyAsync", &MemcpyAsync, &missing);
  resolve(library_, "cudaLaunchHostFunc", &LaunchHostFunc, &missing);
  if (!missing.empty()) {
    reason_ = "CUDA runtime lacks " + missing;
    HVD_LOG(WARNING) << reason_ << "; CUDA memory is not usable";
    return;
  }
  int count = 0;
  const Error error = GetDeviceCount(&count);
  if (error != kSuccess) {
    reason_ = "no usable CUDA device (" + error_text(error) + ")";
    HVD_LOG(DEBUG) << reason_;
    return;
  }
  device_count_ = count;
  if (count == 0) reason_ = "no CUDA device";
}

std::string CudaRuntime::error_text(Error error) const {
  std::string text = GetErrorName != nullptr ? GetErrorName(error) : "";
  if (text.empty()) text = "CUDA error " + std::to_string(error);
  if (GetErrorString != nullptr)
    text += std::string(": ") + GetErrorString(error);
  return text;
}

CudaDeviceGuard::CudaDeviceGuard(const CudaRuntime& cuda, int device)
    : cuda_(cuda) {
  status_ = cuda_.GetDevice(&previous_);
  if (status_ == CudaRuntime::kSuccess && previous_ != device) {
    status_ = cuda_.SetDevice(device);
  } else {
    previous_ = -1;  // nothing to restore
  }
}

CudaDeviceGuard::~CudaDeviceGuard() {
  if (previous_ >= 0) cuda_.SetDevice(previous_);
}

}  // namespace hvd
