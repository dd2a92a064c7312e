// Requests, outgoing pieces and arriving messages of the tcp transport. All
// come from pools owned by the transport, so steady traffic allocates
// nothing.
#pragma once

#include <cstdint>

#include "common/intrusive_list.h"
#include "horovod/abi.h"
#include "protocol.h"

namespace hvd_tcp {

class Connection;
class Transport;
struct InMessage;

struct Request {
  bool send = true;
  Transport* transport = nullptr;
  uint8_t* buf = nullptr;
  uint64_t bytes = 0;
  uint64_t tag = 0;
  uint32_t parts_left = 0;       // send: pieces not yet fully written
  InMessage* message = nullptr;  // receive: the message it is matched to

  bool complete = false;
  hvd_completion result{};

  hvd_transport_common::Link queue;   // posted receives
  hvd_transport_common::Link active;  // the connection's pending set
};

using RequestQueue = hvd_transport_common::List<Request, &Request::queue>;
using ActiveRequests = hvd_transport_common::List<Request, &Request::active>;

// One piece on a stream's send queue: a header, then payload.
struct TxItem {
  uint8_t header[sizeof(FrameHeader)];
  uint32_t header_bytes = 0;
  const uint8_t* payload = nullptr;
  uint64_t payload_bytes = 0;
  uint64_t sent = 0;  // of header + payload
  Request* owner = nullptr;
  hvd_transport_common::Link link;
};

using TxQueue = hvd_transport_common::List<TxItem, &TxItem::link>;

// A message whose header has arrived.
struct InMessage {
  uint64_t tag = 0;
  uint64_t length = 0;
  uint32_t parts_left = 0;
  Request* recv = nullptr;  // matched when the header arrived
  bool truncated = false;   // recv too small: the bytes are dropped
  uint8_t* data = nullptr;  // unexpected: its own buffer (BufferPool)
  uint64_t capacity = 0;    // of data
  bool complete = false;
  Request* matched = nullptr;  // unexpected, then a receive was posted

  // Where byte `offset` of the message goes, or null to drop it.
  uint8_t* target(uint64_t offset) const {
    if (recv != nullptr) return truncated ? nullptr : recv->buf + offset;
    return data != nullptr ? data + offset : nullptr;
  }

  hvd_transport_common::Link arriving;    // parts still to come
  hvd_transport_common::Link unexpected;  // no receive at arrival
};

using ArrivingMessages =
    hvd_transport_common::List<InMessage, &InMessage::arriving>;
using UnexpectedMessages =
    hvd_transport_common::List<InMessage, &InMessage::unexpected>;

}  // namespace hvd_tcp
