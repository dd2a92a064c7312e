// The built transport plugins, opened directly (these tests need no loader).
#pragma once

#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include "horovod/transport.h"

namespace hvd_transport_test {

inline std::string plugin_path(const std::string& name) {
#ifdef HVD_TEST_SHM_PLUGIN
  if (name == "shm") return HVD_TEST_SHM_PLUGIN;
#endif
#ifdef HVD_TEST_TCP_PLUGIN
  if (name == "tcp") return HVD_TEST_TCP_PLUGIN;
#endif
#ifdef HVD_TEST_GLOO_PLUGIN
  if (name == "gloo") return HVD_TEST_GLOO_PLUGIN;
#endif
#ifdef HVD_TEST_NCCL_PLUGIN
  if (name == "nccl") return HVD_TEST_NCCL_PLUGIN;
#endif
  throw std::invalid_argument("no transport " + name);
}

// The plugin's table; the library stays loaded for the process's life.
inline const hvd_transport_api& transport_api(const std::string& name) {
  std::string path = plugin_path(name);
  void* dl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) throw std::runtime_error(dlerror());
  auto entry = reinterpret_cast<hvd_transport_get_api_fn>(
      dlsym(dl, HVD_TRANSPORT_ENTRY));
  if (entry == nullptr) throw std::runtime_error(path + ": no entry symbol");
  const hvd_transport_api* api =
      entry(HVD_ABI_VERSION_MAJOR, HVD_ABI_VERSION_MINOR);
  if (api == nullptr) throw std::runtime_error(path + ": declined the core");
  return *api;
}

// The extension of `type` in the plugin's chain, or NULL.
template <typename T>
const T* find_extension(const hvd_transport_api& api, int32_t type) {
  for (const hvd_extension* e = api.ext; e != nullptr; e = e->next) {
    if (e->type == type) return reinterpret_cast<const T*>(e);
  }
  return nullptr;
}

}  // namespace hvd_transport_test
