// The test-only fault hook (horovod_plugin/fault_hook.h), built with
// HOROVOD_FAULT_HOOKS alone: a rank whose data connections go down.
#include "horovod_plugin/fault_hook.h"

#include "transport.h"

HVD_PLUGIN_FAULT_HOOK_ENTRY

namespace hvd_ucx {

void Transport::sever() {
  // Pending requests fail naming this rank, and every endpoint is closed
  // by force (apply_abort), which the peers see as a reset; HVD_ERR_ABORTED
  // tells the core that what this transport refuses from now on is its own
  // side's doing.
  abort(HVD_ERR_ABORTED, rank());
  aborted();
}

}  // namespace hvd_ucx
