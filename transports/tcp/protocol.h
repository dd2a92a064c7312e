// What the two ends of a tcp connection say to each other.
//
// Set-up, on every stream: the connector sends a Hello, the acceptor answers
// with an Ack. A connection is `streams` sockets; the Hello names which one
// this is and the key that groups them.
//
// Data: stream 0 carries every message's FrameHeader, in the order sent,
// followed by the message's first part. A message of split_threshold bytes
// or more is cut into up to `streams` parts; part i > 0 travels on stream i
// behind a PartHeader, and each stream carries its parts in the order the
// messages were sent, so the receiver always knows which message the next
// bytes on a stream belong to.
#pragma once

#include <cstdint>

namespace hvd_tcp {

constexpr uint32_t kHelloMagic = 0x48565448;  // "HVTH"
constexpr uint16_t kProtocolVersion = 1;

struct Hello {
  uint32_t magic;
  uint16_t version;
  uint16_t stream_index;
  uint16_t stream_count;
  uint16_t reserved;
  int32_t rank;           // the connector's world rank
  int32_t expected_rank;  // whom it means to reach, or -1
  uint32_t reserved2;
  uint64_t epoch;
  uint64_t conn_key;  // the same on every stream of the connection
};

struct Ack {
  uint32_t magic;
  int32_t status;  // HVD_OK, or why the acceptor refuses
  int32_t rank;    // the acceptor's world rank
  uint32_t reserved;
  uint64_t epoch;
};

struct FrameHeader {
  uint64_t tag;
  uint64_t length;  // of the whole message
  uint32_t parts;   // 1: all of it follows here
  uint32_t seq;     // message number on this connection
};

struct PartHeader {
  uint32_t seq;
  uint32_t index;
  uint64_t bytes;
};

// Size of each part but the last when a message of `length` bytes goes out
// in parts over `streams` streams; the number of parts is
// ceil(length / part_bytes).
inline uint64_t part_bytes(uint64_t length, uint32_t streams) {
  uint64_t per = (length + streams - 1) / streams;
  return (per + 4095) & ~uint64_t{4095};
}

}  // namespace hvd_tcp
