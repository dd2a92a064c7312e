#include "bootstrap/pmix_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "common/error.h"

namespace hvd {
namespace {

// The soname of PMIx 3 to 5; the development link name as a last resort.
constexpr const char* kNames[] = {"libpmix.so.2", "libpmix.so"};

template <typename Function>
void resolve(void* dl, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(dl, name));
  if (function == nullptr) {
    throw Error(HVD_ERR_NOT_FOUND, std::string("bootstrap (pmix): ") +
                                       kNames[0] + " lacks " + name +
                                       " (PMIx 3 or newer is needed)");
  }
}

PmixLibrary open_library() {
  void* dl = nullptr;
  std::string reason;
  for (const char* name : kNames) {
    dl = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
    if (dl != nullptr) break;
    if (reason.empty()) reason = dlerror();
  }
  if (dl == nullptr) {
    throw Error(HVD_ERR_NOT_FOUND,
                std::string("bootstrap (pmix): not loadable: ") + kNames[0] +
                    " missing (" + reason +
                    "); a job under mpirun or srun needs the PMIx library "
                    "its launcher serves");
  }
  PmixLibrary lib;
  resolve(dl, "PMIx_Init", lib.init);
  resolve(dl, "PMIx_Finalize", lib.finalize);
  resolve(dl, "PMIx_Get", lib.get);
  resolve(dl, "PMIx_Put", lib.put);
  resolve(dl, "PMIx_Commit", lib.commit);
  resolve(dl, "PMIx_Fence", lib.fence);
  resolve(dl, "PMIx_Error_string", lib.error_string);
  resolve(dl, "PMIx_Info_load", lib.info_load);
  resolve(dl, "PMIx_Value_destruct", lib.value_destruct);
  return lib;  // the library stays open for the process's life
}

}  // namespace

void PmixLibrary::release(pmix_value_t* value) const {
  value_destruct(value);
  std::free(value);
}

void PmixLibrary::destruct(pmix_info_t* info) const {
  if (!PMIX_INFO_IS_PERSISTENT(info)) value_destruct(&info->value);
}

const PmixLibrary& pmix_library() {
  // A throw leaves it uninitialised: the next call tries again.
  static const PmixLibrary library = open_library();
  return library;
}

}  // namespace hvd
