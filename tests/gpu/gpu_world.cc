#include "gpu_world.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <poll.h>

#include <chrono>
#include <stdexcept>

namespace hvd_gpu_test {

int cuda_devices(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why != nullptr) {
      *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + ": " +
             cudaGetErrorString(e);
    }
    return 0;
  }
  if (n == 0 && why != nullptr) *why = "cudaGetDeviceCount found none";
  return n;
}

const hvd_transport_api& nccl_api() {
  static const hvd_transport_api* api = [] {
    void* dl = dlopen(HVD_TEST_NCCL_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (dl == nullptr) throw std::runtime_error(dlerror());
    auto entry = reinterpret_cast<hvd_transport_get_api_fn>(
        dlsym(dl, HVD_TRANSPORT_ENTRY));
    if (entry == nullptr) throw std::runtime_error("no entry symbol");
    return entry(HVD_ABI_VERSION_MAJOR, HVD_ABI_VERSION_MINOR);
  }();
  return *api;
}

const hvd_transport_collectives& nccl_collectives() {
  for (const hvd_extension* e = nccl_api().ext; e != nullptr; e = e->next) {
    if (e->type == HVD_EXT_TRANSPORT_COLLECTIVES) {
      return *reinterpret_cast<const hvd_transport_collectives*>(e);
    }
  }
  throw std::runtime_error("nccl: no collectives extension");
}

hvd_completion wait(const hvd_transport_api& api, hvd_transport* t,
                    hvd_request* req, int seconds) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  hvd_completion c{};
  c.struct_size = sizeof(c);
  for (int spins = 0;; ++spins) {
    int32_t done = 0;
    hvd_status s = api.test(req, &done, &c);
    if (s != HVD_OK) {
      throw std::runtime_error(std::string("test: ") + api.last_error(t));
    }
    if (done) return c;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("a collective did not finish in time");
    }
    if (spins < 1000) continue;  // GPU work is short: spin first
    if (api.wait_arm(t) == HVD_OK) {
      pollfd p{api.wait_fd(t), POLLIN, 0};
      poll(&p, 1, 10);
    }
  }
}

}  // namespace hvd_gpu_test
