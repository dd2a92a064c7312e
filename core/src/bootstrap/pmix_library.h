// PMIx, opened at run time: libhorovod.so does not link it, so a job that
// never runs under a PMIx launcher (horovodrun's own ranks, a single
// process) needs no PMIx installed. The types and constants come from
// pmix.h at build time; the functions from the system's libpmix.so.2 (the
// one its mpirun or srun serves) when a rank first bootstraps through PMIx.
#pragma once

#include <pmix.h>

namespace hvd {

struct PmixLibrary {
  decltype(&::PMIx_Init) init;
  decltype(&::PMIx_Finalize) finalize;
  decltype(&::PMIx_Get) get;
  decltype(&::PMIx_Put) put;
  decltype(&::PMIx_Commit) commit;
  decltype(&::PMIx_Fence) fence;
  decltype(&::PMIx_Error_string) error_string;
  decltype(&::PMIx_Info_load) info_load;
  decltype(&::PMIx_Value_destruct) value_destruct;

  // Frees a value PMIx_Get returned (PMIX_VALUE_RELEASE).
  void release(pmix_value_t* value) const;
  // Clears what info_load copied into `info` (PMIX_INFO_DESTRUCT).
  void destruct(pmix_info_t* info) const;
};

// Opens the library once; throws HVD_ERR_NOT_FOUND saying what is missing.
const PmixLibrary& pmix_library();

}  // namespace hvd
