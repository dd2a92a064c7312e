// What travels besides the caller's data: the listen handle, and control
// messages (connect handshake, liveness probes) on the reserved control tag.
//
// Tag layout, within the provider's usable tag bits (u of them):
//   bit u-1        control flag (control messages carry only this bit)
//   bits u-2..u-16 the receiving connection's id (15 bits, never 0)
//   bits u-17..0   the caller's tag (tag_bits = u - 16)
#pragma once

#include <cstdint>

namespace hvd_ofi {

constexpr uint32_t kMagic = 0x4f464931;  // "OFI1"
constexpr uint32_t kNameMax = 200;       // endpoint name (fi_getname)
constexpr uint32_t kConnIdBits = 15;
constexpr uint32_t kMaxConnId = (1u << kConnIdBits) - 1;

// The blob a peer connects to: which endpoint and which listener on it.
struct Handle {
  uint32_t magic;
  uint32_t listener;
  uint32_t name_bytes;
  uint8_t name[kNameMax];
};

enum CtrlType : uint32_t {
  kHello = 1,    // connector -> listener: my rank, epoch, id, address
  kWelcome = 2,  // acceptor -> connector: verdict, my rank, epoch, id
  kPing = 3,     // "are you there?" to a silent peer
  kPong = 4
};

struct CtrlMessage {
  uint32_t magic;
  uint32_t type;      // CtrlType
  uint32_t listener;  // kHello: the listener addressed
  uint32_t from_id;   // the sender's connection id
  uint32_t to_id;     // the receiver's connection id (0 in kHello)
  int32_t rank;       // the sender's world rank
  int32_t status;     // kWelcome: HVD_OK or HVD_ERR_EPOCH_MISMATCH
  uint32_t name_bytes;
  uint64_t epoch;
  uint8_t name[kNameMax];  // kHello: the connector's endpoint name
};

}  // namespace hvd_ofi
