// What the two ends of a gloo connection say to each other.
//
// Set-up: a plain TCP socket (the listener's) carries a Hello from the
// connector and an Ack back, each with the sender's Gloo pair address; both
// ends then connect their pair of a two-rank Gloo context (acceptor rank 0,
// connector rank 1) and close the socket.
//
// Data: every message starts with a Control record on kControlSlot, which
// Gloo delivers in order. A message of up to kInlineBytes travels inside
// it. A larger one travels on its own slot (data_slot(seq)) once the
// receiver has a buffer for it; the receiver answers with an Ack record, and
// the send completes on the Ack. Per-message slots let the receiver take
// messages in any tag order without copying; the receiver's control worker
// reads every record as it comes, so a record never waits for the other
// side's application.
#pragma once

#include <cstdint>

namespace hvd_gloo {

constexpr uint64_t kControlSlot = 1;
constexpr uint64_t kDataSlotBit = uint64_t{1} << 63;
inline uint64_t data_slot(uint64_t seq) { return kDataSlotBit | seq; }

constexpr uint32_t kTagBits = 64;
constexpr size_t kInlineBytes = 4096;

constexpr uint32_t kHandleMagic = 0x48564c47;  // "HVLG"
constexpr uint32_t kHelloMagic = 0x48564c48;
constexpr uint32_t kAckMagic = 0x48564c41;
constexpr uint16_t kProtocolVersion = 1;
constexpr uint32_t kAddressMax = 192;

// The listen handle: the listener's rank and socket address.
struct Handle {
  uint32_t magic;
  int32_t rank;
  uint16_t port;  // network order
  uint16_t reserved;
  uint32_t ipv4;  // network order
};

struct Hello {
  uint32_t magic;
  uint16_t version;
  uint16_t address_bytes;
  int32_t rank;           // the connector's world rank
  int32_t expected_rank;  // whom it means to reach, or -1
  uint64_t epoch;
  char address[kAddressMax];  // its Gloo pair address
};

struct Ack {
  uint32_t magic;
  int32_t status;  // HVD_OK, or why the acceptor refuses
  int32_t rank;    // the acceptor's world rank
  uint16_t address_bytes;
  uint16_t reserved;
  uint64_t epoch;
  char address[kAddressMax];
};

struct Control {
  enum Kind : uint32_t { kMessage = 1, kReceived = 2 };
  uint32_t kind;
  uint32_t reserved;
  uint64_t seq;     // the sender's number for the message
  uint64_t tag;     // kMessage
  uint64_t length;  // kMessage: payload bytes (inline when <= kInlineBytes)
};

constexpr size_t kControlBytes = sizeof(Control) + kInlineBytes;

}  // namespace hvd_gloo
