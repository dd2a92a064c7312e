// Framework bindings registered with hvd_register_adapter(). Registration
// is process-wide and independent of init: a binding registers when it is
// imported, before or after hvd_init.
#pragma once

#include <atomic>
#include <string>

#include "horovod/adapter.h"

struct hvd_adapter_s {
  const hvd_adapter_api* api = nullptr;
  void* ctx = nullptr;
  std::string name;
  std::atomic<int> in_flight{0};  // ops naming it that have not ended
};

namespace hvd::runtime {

// Counts an op against `adapter`; throws hvd::Error HVD_ERR_INVALID_ARGUMENT
// when it is not registered.
void adapter_acquire(hvd_adapter_s* adapter);
void adapter_release(hvd_adapter_s* adapter);
// Whether a registered adapter was built for a minor before 1.4: its
// callbacks then come from the background thread only.
bool adapter_wants_background_thread();

}  // namespace hvd::runtime
