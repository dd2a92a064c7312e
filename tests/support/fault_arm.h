// Arms the test-only fault hook of every loaded built-in transport
// (horovod_plugin/fault_hook.h; a build with HOROVOD_FAULT_HOOKS): the
// action happens at the `after_posts`-th data post from now, on the core's
// thread. Call after hvd_init, when the transports are loaded. Returns how
// many transports were armed (0: none loaded has the hook).
#pragma once

#include <dlfcn.h>
#include <link.h>

#include <cstdint>
#include <cstring>

#include "horovod_plugin/fault_hook.h"

namespace hvd_test {

inline int arm_transport_fault(hvd_plugin::fault::Action action,
                               int64_t after_posts) {
  struct Arm {
    int32_t action;
    int64_t after;
    int armed = 0;
  } arm{action, after_posts};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* a = static_cast<Arm*>(data);
        if (std::strstr(info->dlpi_name, "horovod-transport-") == nullptr)
          return 0;
        void* lib = dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD);
        if (lib == nullptr) return 0;
        using Fn = void (*)(int32_t, int64_t);
        if (auto fn = reinterpret_cast<Fn>(dlsym(lib, "hvd_fault_arm"))) {
          fn(a->action, a->after);
          ++a->armed;
        }
        dlclose(lib);
        return 0;
      },
      &arm);
  return arm.armed;
}

}  // namespace hvd_test
