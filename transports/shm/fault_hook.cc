// The test-only fault hook (horovod_plugin/fault_hook.h), built with
// HOROVOD_FAULT_HOOKS alone: a rank whose data connections go down.
#include <sys/mman.h>
#include <sys/socket.h>

#include "common/host_access.h"
#include "connection.h"
#include "horovod_plugin/fault_hook.h"
#include "segment.h"
#include "transport.h"

HVD_PLUGIN_FAULT_HOOK_ENTRY

namespace hvd_shm {

void Connection::sever() {
  if (socket_ >= 0) ::shutdown(socket_, SHUT_RDWR);
  if (segment_ && segment_->base() != nullptr) {
    // Private memory in place of the shared rings: nothing written here
    // reaches the peer any more, and nothing of the peer's arrives.
    ::mmap(segment_->base(), segment_->size(), PROT_READ | PROT_WRITE,
           MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  }
}

void Transport::sever() {
  // What is pending fails naming this rank before the sockets go, so their
  // errors are not blamed on a peer; HVD_ERR_ABORTED tells the core that
  // what this transport refuses from now on is its own side's doing.
  abort(HVD_ERR_ABORTED, hvd_transport_common::world_rank(host_));
  aborted();
  for (Connection* c : connections_) c->sever();
}

}  // namespace hvd_shm
