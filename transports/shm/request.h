// One send, receive, put, get or collective of the shm transport, from
// isend() (irecv, iput, iget, a collective's post) until test() has reported
// it. Requests come from a pool owned by the transport, so steady traffic
// allocates nothing.
#pragma once

#include <cstdint>

#include "common/intrusive_list.h"
#include "horovod/abi.h"

namespace hvd_shm {

class Comm;
class Connection;
class Transport;

enum class RequestKind : uint8_t { kSend, kRecv, kPut, kGet, kCollective };

struct Request {
  RequestKind kind = RequestKind::kSend;
  Transport* transport = nullptr;
  Connection* conn = nullptr;  // null once complete or the conn is closed
  Comm* comm = nullptr;        // a collective's, until it completes

  uint8_t* buf = nullptr;  // send: the source; receive: the destination
  uint64_t bytes = 0;      // of buf
  uint64_t tag = 0;

  // Send through the ring: bytes written so far, header first.
  uint64_t done = 0;
  bool header_sent = false;
  // Send whose payload stays in a memory segment of ours until acked.
  bool rendezvous = false;
  uint64_t segment = 0;
  uint64_t offset = 0;
  uint64_t cookie = 0;

  // Receive: the matched message's size; larger than `bytes` = truncated.
  uint64_t message_bytes = 0;

  // A copy in progress (rendezvous receive, put, get).
  const uint8_t* copy_src = nullptr;
  uint8_t* copy_dst = nullptr;
  uint64_t copy_total = 0;
  bool streaming = false;

  bool complete = false;
  hvd_completion result{};

  hvd_transport_common::Link queue;   // in one of the connection's queues
  hvd_transport_common::Link active;  // in the connection's pending set
};

using RequestQueue = hvd_transport_common::List<Request, &Request::queue>;
using ActiveRequests = hvd_transport_common::List<Request, &Request::active>;

// A message that arrived before its receive was posted.
struct Unexpected {
  uint64_t tag = 0;
  uint64_t length = 0;
  uint8_t* data = nullptr;     // eager: a buffer of `length` bytes (malloc)
  bool complete = false;       // eager: all of it is in `data`
  Request* matched = nullptr;  // a receive posted while it still arrives
  bool rendezvous = false;     // the payload waits in the sender's segment
  uint64_t segment = 0;
  uint64_t offset = 0;
  uint64_t cookie = 0;
  hvd_transport_common::Link link;
};

using UnexpectedQueue =
    hvd_transport_common::List<Unexpected, &Unexpected::link>;

}  // namespace hvd_shm
