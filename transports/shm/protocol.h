// What the two ends of a shm connection say to each other: the handshake
// over the UNIX socket, and the frames in the rings.
#pragma once

#include <cstdint>

#include "horovod/transport.h"

namespace hvd_shm {

constexpr uint32_t kHandleMagic = 0x48565348;  // "HVSH"
constexpr uint16_t kProtocolVersion = 1;

// The listen handle: where to connect, and which host it is on.
struct Handle {
  uint32_t magic;
  uint16_t version;
  uint16_t reserved;
  uint32_t pid;
  char boot_id[40];
  char socket_name[76];  // abstract socket, NUL-terminated
};
static_assert(sizeof(Handle) <= HVD_TRANSPORT_HANDLE_MAX);

enum HelloKind : uint16_t { kHello = 1, kHelloReply = 2 };

// Connector -> acceptor with the segment's and the connector's wake fds;
// acceptor -> connector with its wake fd (or a refusal).
struct Hello {
  uint32_t magic;
  uint16_t version;
  uint16_t kind;
  int32_t rank;           // sender's world rank
  int32_t expected_rank;  // who the sender thinks it talks to, or -1
  uint64_t epoch;
  int32_t status;  // reply: HVD_OK or why the acceptor refuses
  uint32_t pid;
  uint64_t ring_bytes;
  char prefix[96];   // sender's name prefix (its memory segments)
  char segment[96];  // hello: the connection segment's name
};

enum FrameType : uint32_t {
  kData = 1,        // eager: `length` payload bytes follow
  kRendezvous = 2,  // the payload is in the sender's memory segment
  kAck = 3          // the receiver is done with a rendezvous payload
};

struct FrameHeader {
  uint32_t type;
  uint32_t reserved;
  uint64_t tag;
  uint64_t length;
  uint64_t segment;  // rendezvous: id of the sender's memory segment
  uint64_t offset;   // rendezvous: where the payload starts in it
  uint64_t cookie;   // rendezvous, ack: names the send
};

// Exported key of a memory segment region (mr_export / mr_import).
constexpr uint32_t kKeyMagic = 0x4856534b;  // "HVSK"
struct MemoryKey {
  uint32_t magic;
  uint32_t pid;
  uint64_t segment;
  uint64_t offset;
  uint64_t bytes;
  char boot_id[40];
  char prefix[96];
};
static_assert(sizeof(MemoryKey) <= HVD_TRANSPORT_MR_KEY_MAX);

}  // namespace hvd_shm
