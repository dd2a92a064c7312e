// A pool of a transport's requests (hvd_plugin::Pool) that also finishes
// and reaps them. Single-threaded: the core's thread takes, finishes and
// reaps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "horovod/abi.h"
#include "horovod_plugin/pool.h"

namespace hvd_transport_common {

// hvd_transport_common::Pool, as the transports name it.
using hvd_plugin::Pool;

// Requests with `bool complete` and `hvd_completion result` members, from
// take() until test() has reported them (reap).
template <typename Request>
class RequestPool {
 public:
  Request* take() { return pool_.take(); }

  // Marks `req` complete with its result.
  void finish(Request* req, hvd_status status, int32_t peer, uint64_t bytes) {
    req->complete = true;
    req->result.struct_size = sizeof(hvd_completion);
    req->result.status = status;
    req->result.peer = peer;
    req->result.bytes = bytes;
    ++finished_;
  }

  // test()'s answer for `req`: false while it is not complete; else its
  // result is copied into `out` (may be NULL; as much as the caller's
  // struct_size holds) and `req` returns to the pool.
  bool reap(Request* req, hvd_completion* out) {
    if (!req->complete) return false;
    if (out != nullptr) {
      size_t room = out->struct_size != 0 ? out->struct_size : sizeof(*out);
      hvd_completion result = req->result;
      result.struct_size = std::min(room, sizeof(result));
      std::memcpy(out, &result, result.struct_size);
    }
    pool_.put(req);
    return true;
  }

  // Whether any request finished since the last call (wait_arm: then the
  // core must look again before it sleeps).
  bool finished_since_last_call() {
    bool any = finished_ > 0;
    finished_ = 0;
    return any;
  }

 private:
  Pool<Request> pool_;
  uint64_t finished_ = 0;
};

}  // namespace hvd_transport_common
