// What the two ends of a ucx connection say to each other, and how the
// 64-bit UCP tag is split.
//
// Tag: bits 63..41 name the receiving end's connection (or listener), bit 40
// marks a set-up message, bits 39..0 are the caller's tag. Every worker
// numbers its own connections, so the receiver's number makes the tag space
// of one connection disjoint from every other's on that worker.
//
// Set-up: the connector fetches the listener's worker address from the
// bootstrap store (the listen handle names it), creates an endpoint and sends
// a Hello (its rank, epoch, connection number and own worker address) to the
// listener's set-up tag. The acceptor creates the endpoint back and answers
// with an Ack on the connector's set-up tag. A Hello from another epoch is
// answered with HVD_ERR_EPOCH_MISMATCH, which both ends report.
#pragma once

#include <cstdint>

namespace hvd_ucx {

constexpr uint32_t kTagBits = 40;
constexpr uint32_t kIdShift = 41;
constexpr uint64_t kUserMask = (uint64_t{1} << kTagBits) - 1;
constexpr uint64_t kSetupBit = uint64_t{1} << kTagBits;
constexpr uint32_t kMaxId = (1u << (64 - kIdShift)) - 1;
constexpr uint64_t kFullMask = ~uint64_t{0};

inline uint64_t data_tag(uint32_t id, uint64_t tag) {
  return (uint64_t{id} << kIdShift) | (tag & kUserMask);
}
inline uint64_t hello_tag(uint32_t listener_id) {
  return (uint64_t{listener_id} << kIdShift) | kSetupBit;
}
inline uint64_t ack_tag(uint32_t conn_id) {
  return (uint64_t{conn_id} << kIdShift) | kSetupBit | 1;
}

constexpr uint32_t kHandleMagic = 0x48565558;  // "HVUX"
constexpr uint32_t kHelloMagic = 0x48565548;
constexpr uint32_t kAckMagic = 0x48565541;
constexpr uint16_t kProtocolVersion = 1;

// The listen handle: where the listener's worker address is published.
struct Handle {
  uint32_t magic;
  int32_t rank;  // whose bootstrap entry holds the address
  uint32_t listener_id;
  uint32_t reserved;
  char key[48];  // NUL-terminated bootstrap key
};

struct Hello {
  uint32_t magic;
  uint16_t version;
  uint16_t reserved;
  int32_t rank;            // the connector's world rank
  int32_t expected_rank;   // whom it means to reach, or -1
  uint32_t conn_id;        // the connector's number for the connection
  uint32_t address_bytes;  // the connector's worker address follows
  uint64_t epoch;
};

struct Ack {
  uint32_t magic;
  int32_t status;  // HVD_OK, or why the acceptor refuses
  int32_t rank;    // the acceptor's world rank
  uint32_t conn_id;
  uint64_t epoch;
};

}  // namespace hvd_ucx
