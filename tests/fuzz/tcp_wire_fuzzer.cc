// What a tcp peer sends: the Hello that opens a stream, the Ack to ours, and
// the header of every message (length, parts, sequence), checked against a
// connection of 1 to 16 streams. Accepted headers must describe parts that
// cover the message exactly. Input: a byte (the stream count), a Hello, then
// FrameHeaders.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "wire.h"

using namespace hvd_tcp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint32_t streams = 1 + (data[0] & 15);
  ++data;
  --size;

  // A Hello, read also as an Ack, then message headers.
  if (size < sizeof(Hello)) return 0;
  Hello hello;
  std::memcpy(&hello, data, sizeof hello);
  if (hello_problem(hello).empty() &&
      (hello.stream_index >= hello.stream_count || hello.rank < 0))
    __builtin_trap();
  Ack ack;
  std::memcpy(&ack, data, sizeof ack);
  (void)ack_problem(ack);
  data += sizeof(Hello);
  size -= sizeof(Hello);

  uint32_t expect_seq = 0;
  for (size_t at = 0; at + sizeof(FrameHeader) <= size;
       at += sizeof(FrameHeader)) {
    FrameHeader frame;
    std::memcpy(&frame, data + at, sizeof frame);
    uint64_t piece = 0;
    if (!header_problem(frame, streams, expect_seq, &piece).empty()) continue;
    ++expect_seq;
    if (frame.length > kMaxMessageBytes || frame.parts > streams)
      __builtin_trap();
    if (frame.parts > 1) {
      // Parts 0..parts-2 are `piece` bytes, the last what remains.
      if (piece == 0 || (frame.parts - 1) * piece >= frame.length ||
          frame.parts * piece < frame.length)
        __builtin_trap();
    }
  }
  return 0;
}
