// The test-only fault hook (horovod_plugin/fault_hook.h), built with
// HOROVOD_FAULT_HOOKS alone: a rank whose data connections go down.
#include <sys/socket.h>

#include "common/host_access.h"
#include "connection.h"
#include "horovod_plugin/fault_hook.h"
#include "transport.h"

HVD_PLUGIN_FAULT_HOOK_ENTRY

namespace hvd_tcp {

void Connection::sever() {
  for (Stream& s : streams_)
    if (s.fd >= 0) ::shutdown(s.fd, SHUT_RDWR);
}

void Transport::sever() {
  // What is pending fails naming this rank before the sockets go, so their
  // errors are not blamed on a peer; HVD_ERR_ABORTED tells the core that
  // what this transport refuses from now on is its own side's doing.
  abort(HVD_ERR_ABORTED, hvd_transport_common::world_rank(host_));
  aborted();
  for (Connection* c : connections_) c->sever();
}

}  // namespace hvd_tcp
