// A send or receive of the ucx transport. UCX finishes its part through a
// callback; the caller sees the result through test(). The request is freed
// once both have happened (or, for a connection's own set-up messages, once
// UCX is done and the connection no longer cares).
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <vector>

#include "common/intrusive_list.h"
#include "horovod/abi.h"

namespace hvd_ucx {

class Connection;
class Transport;

struct Request {
  Transport* transport = nullptr;
  Connection* conn = nullptr;  // null once the connection is closed
  bool send = true;
  bool user = true;     // handed to the caller (not a set-up message)
  uint64_t bytes = 0;   // posted size
  void* ucx = nullptr;  // UCX's request while it is in flight
  bool ucx_done = false;
  ucs_status_t ucx_status = UCS_OK;
  uint64_t length = 0;    // receive: the message's size
  bool complete = false;  // result holds what test() reports
  bool reported = false;  // test() said done, or nobody will ask
  hvd_completion result{};
  std::vector<uint8_t> storage;  // a set-up message's bytes

  hvd_transport_common::Link pending;  // the connection's unfinished ones
};

using PendingRequests = hvd_transport_common::List<Request, &Request::pending>;

}  // namespace hvd_ucx
