// The control plane's wire: a byte stream cut into frames by FrameReader
// (fed in pieces, as a socket delivers it), each payload decoded as what its
// type carries. The first input byte sets the reader's limit (a handshake's
// or a link's) and the size of the pieces.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "control/frames.h"

using namespace hvd::control;

namespace {

void decode_payload(FrameType type, const uint8_t* payload, uint32_t size) {
  switch (type) {
    case FrameType::hello: {
      Hello hello;
      if (decode(payload, size, &hello)) {
        // What was decoded encodes to the same bytes.
        auto again = encode(hello);
        if (again.size() != size ||
            std::memcmp(again.data(), payload, size) != 0)
          __builtin_trap();
      }
      return;
    }
    case FrameType::welcome: {
      Welcome welcome;
      (void)decode(payload, size, &welcome);
      return;
    }
    case FrameType::failure: {
      FailureNote note;
      if (decode(payload, size, &note) &&
          (note.host.size() > kMaxNoteText || note.reason.size() > kMaxNoteText))
        __builtin_trap();
      return;
    }
    case FrameType::reject: {
      Decoder in(payload, size);
      (void)in.u32();
      (void)in.str();
      return;
    }
    case FrameType::gather: {
      if (size < 8) return;
      std::vector<std::vector<uint8_t>> by_rank;
      int world = 1 + payload[0] % 64;
      if (decode_gather_bundle(payload + 8, size - 8, world, &by_rank) &&
          by_rank.size() != static_cast<size_t>(world))
        __builtin_trap();
      return;
    }
    case FrameType::broadcast: {
      if (size < 8) return;
      HostTable table;
      int world = 1 + payload[0] % 64;
      if (decode(payload + 8, size - 8, world, &table)) {
        if (table.index.size() != static_cast<size_t>(world)) __builtin_trap();
        for (uint32_t i : table.index)
          if (i >= table.names.size()) __builtin_trap();
      }
      return;
    }
    default:
      return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool handshake = data[0] & 1;
  const size_t piece = 1 + (data[0] >> 1);  // 1..128 bytes per "recv"
  ++data;
  --size;

  // A link's limit is 1 GiB; the reader's room follows what arrived (at
  // most twice that, plus one read's worth), whatever a header declares.
  FrameReader reader(handshake ? kMaxHandshakePayload : kMaxFramePayload);
  size_t at = 0;
  while (at < size) {
    size_t room = 0;
    uint8_t* space = reader.space(&room);
    size_t n = std::min({room, piece, size - at});
    std::memcpy(space, data + at, n);
    reader.commit(n);
    at += n;
    if (reader.capacity() > 2 * at + (64u << 10)) __builtin_trap();
    FrameType type;
    const uint8_t* payload;
    uint32_t length;
    bool bad = false;
    while (reader.next(&type, &payload, &length, &bad))
      decode_payload(type, payload, length);
    if (bad) {
      if (reader.why_bad().empty()) __builtin_trap();
      return 0;
    }
  }
  return 0;
}
