#include "device/cuda_kernels.h"

#include <dlfcn.h>

#include "common/log.h"

namespace hvd {
namespace {

constexpr const char* kLibrary = "libhorovod-cuda-kernels.so";

// The directory of the shared object this code is linked into ("" when it
// is the executable itself).
std::string own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&CudaKernels::get), &info) == 0 ||
      info.dli_fname == nullptr) {
    return "";
  }
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

}  // namespace

const CudaKernels& CudaKernels::get() {
  static const CudaKernels kernels;
  return kernels;
}

CudaKernels::CudaKernels() {
  std::string tried;
  void* library = nullptr;
  for (const std::string& name :
       {own_directory() + kLibrary, std::string(kLibrary)}) {
    library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) break;
    const char* why = dlerror();
    if (!tried.empty()) tried += "; ";
    tried += why != nullptr ? why : name;
  }
  if (library == nullptr) {
    reason_ = "CUDA kernels not found (" + tried + ")";
    HVD_LOG(DEBUG) << reason_;
    return;
  }
  auto version =
      reinterpret_cast<int (*)()>(dlsym(library, "hvd_cuda_kernels_version"));
  batched_copy = reinterpret_cast<decltype(batched_copy)>(
      dlsym(library, "hvd_cuda_batched_copy"));
  scale = reinterpret_cast<decltype(scale)>(dlsym(library, "hvd_cuda_scale"));
  reduce =
      reinterpret_cast<decltype(reduce)>(dlsym(library, "hvd_cuda_reduce"));
  if (version == nullptr || batched_copy == nullptr || scale == nullptr ||
      reduce == nullptr) {
    reason_ = std::string(kLibrary) + " lacks the kernels' entry points";
  } else if (version() != HVD_CUDA_KERNELS_VERSION) {
    reason_ = std::string(kLibrary) + " is of version " +
              std::to_string(version()) + ", this core needs " +
              std::to_string(HVD_CUDA_KERNELS_VERSION);
  }
  if (!reason_.empty()) {
    HVD_LOG(WARNING) << reason_ << "; CUDA kernels are not used";
    batched_copy = nullptr;
    scale = nullptr;
    reduce = nullptr;
  }
}

}  // namespace hvd
