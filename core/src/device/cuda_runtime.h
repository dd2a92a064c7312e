// The CUDA runtime, loaded on first use with dlopen so the core runs where
// no driver or toolkit exists. Only the handful of entry points the device
// layer needs are resolved; the CUDA headers are not needed to build.
#pragma once

#include <string>

namespace hvd {

class CudaRuntime {
 public:
  using Error = int;     // cudaError_t
  using Stream = void*;  // cudaStream_t
  using Event = void*;   // cudaEvent_t
  static constexpr Error kSuccess = 0;
  static constexpr Error kNotReady = 600;
  static constexpr unsigned kStreamNonBlocking = 0x1;
  static constexpr unsigned kEventDisableTiming = 0x2;
  static constexpr int kMemcpyDefault = 4;

  // Loads the library on the first call; thread-safe.
  static const CudaRuntime& get();

  // Devices usable here: 0 when the library, the driver or a GPU is missing.
  int device_count() const { return device_count_; }
  // Why device_count() is 0 ("libcudart.so: cannot open shared object...");
  // "" when devices were found.
  const std::string& unavailable_reason() const { return reason_; }
  // "cudaErrorInvalidValue: invalid argument" for messages.
  std::string error_text(Error error) const;

  Error (*GetDeviceCount)(int*) = nullptr;
  Error (*GetDevice)(int*) = nullptr;
  Error (*SetDevice)(int) = nullptr;
  const char* (*GetErrorName)(Error) = nullptr;
  const char* (*GetErrorString)(Error) = nullptr;
  Error (*StreamCreateWithFlags)(Stream*, unsigned) = nullptr;
  Error (*StreamDestroy)(Stream) = nullptr;
  Error (*StreamSynchronize)(Stream) = nullptr;
  Error (*StreamWaitEvent)(Stream, Event, unsigned) = nullptr;
  Error (*EventCreateWithFlags)(Event*, unsigned) = nullptr;
  Error (*EventDestroy)(Event) = nullptr;
  Error (*EventRecord)(Event, Stream) = nullptr;
  Error (*EventQuery)(Event) = nullptr;
  Error (*EventSynchronize)(Event) = nullptr;
  Error (*Malloc)(void**, size_t) = nullptr;
  Error (*Free)(void*) = nullptr;
  Error (*Memcpy)(void*, const void*, size_t, int) = nullptr;
  Error (*MemcpyAsync)(void*, const void*, size_t, int, Stream) = nullptr;
  Error (*LaunchHostFunc)(Stream, void (*)(void*), void*) = nullptr;

 private:
  CudaRuntime();
  void* library_ = nullptr;
  int device_count_ = 0;
  std::string reason_;
};

// Makes `device` current on this thread for the guard's lifetime.
class CudaDeviceGuard {
 public:
  CudaDeviceGuard(const CudaRuntime& cuda, int device);
  ~CudaDeviceGuard();
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;
  CudaRuntime::Error status() const { return status_; }

 private:
  const CudaRuntime& cuda_;
  int previous_ = -1;
  CudaRuntime::Error status_ = CudaRuntime::kSuccess;
};

}  // namespace hvd
