// The test-only fault hook (horovod_plugin/fault_hook.h), built with
// HOROVOD_FAULT_HOOKS alone: a rank whose data connections go down.
#include "horovod_plugin/fault_hook.h"

#include "transport.h"

HVD_PLUGIN_FAULT_HOOK_ENTRY

namespace hvd_ofi {

void Transport::sever() {
  // What is pending fails naming this rank, and every connection stops
  // answering probes: its peers find it silent past peer_timeout, as a rank
  // whose links went down. HVD_ERR_ABORTED tells the core that what this
  // transport refuses from now on is its own side's doing.
  abort(HVD_ERR_ABORTED, rank_);
  aborted();
  for (Connection* c : by_id_) {
    if (c != nullptr) fail_connection(c, HVD_ERR_ABORTED, "");
  }
}

}  // namespace hvd_ofi
