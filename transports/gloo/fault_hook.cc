// The test-only fault hook (horovod_plugin/fault_hook.h), built with
// HOROVOD_FAULT_HOOKS alone: a rank whose data connections go down.
#include "horovod_plugin/fault_hook.h"

#include <exception>
#include <vector>

#include "connection.h"
#include "transport.h"

HVD_PLUGIN_FAULT_HOOK_ENTRY

namespace hvd_gloo {

void Connection::sever() {
  gloo::transport::Pair* pair = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pair = pair_;
  }
  // Its socket closes: the peer reads the end of the stream.
  try {
    if (pair != nullptr) pair->close();
  } catch (const std::exception&) {
  }
}

void Transport::sever() {
  // What is pending fails naming this rank before the pairs close, so their
  // errors are not blamed on a peer; HVD_ERR_ABORTED tells the core that
  // what this transport refuses from now on is its own side's doing.
  abort(HVD_ERR_ABORTED, rank());
  std::vector<Connection*> conns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    conns.assign(connections_.begin(), connections_.end());
  }
  for (Connection* c : conns) c->sever();
}

}  // namespace hvd_gloo
