// What a shm peer hands over: its Hello (or the reply to ours) and the
// connection segment it created, whose header decides where the rings lie.
// An accepted segment must place both rings inside the mapping. Input: a
// byte (which message, and whether all of it arrived), a Hello, a
// SegmentHeader, the segment's size.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ring.h"
#include "wire.h"

using namespace hvd_shm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const HelloKind kind = (data[0] & 1) ? kHello : kHelloReply;
  const size_t received = (data[0] & 2) ? sizeof(Hello) : size - 1;
  ++data;
  --size;

  // A Hello, then a segment's header, then the segment's size (u64).
  if (size < sizeof(Hello) + sizeof(SegmentHeader) + 8) return 0;
  Hello hello;
  std::memcpy(&hello, data, sizeof hello);
  (void)hello_problem(hello, received, kind);
  std::vector<uint8_t> segment(data + sizeof(Hello),
                               data + sizeof(Hello) + sizeof(SegmentHeader));
  // The mapping's size is claimed, not allocated: segment_problem() reads
  // only the header, which ASan checks.
  uint64_t claimed_size;
  std::memcpy(&claimed_size, data + sizeof(Hello) + sizeof(SegmentHeader), 8);
  if (segment_problem(segment.data(), claimed_size, hello.ring_bytes).empty()) {
    SegmentHeader header;
    std::memcpy(static_cast<void*>(&header), segment.data(), sizeof header);
    uint64_t end = header.data_offset + 2 * header.ring_bytes;
    if (header.ring_bytes == 0 || end > claimed_size ||
        header.data_offset < sizeof(SegmentHeader))
      __builtin_trap();
  }
  return 0;
}
