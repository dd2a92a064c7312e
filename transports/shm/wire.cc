#include "wire.h"

#include <cstring>

#include "ring.h"

namespace hvd_shm {

std::string hello_problem(const Hello& h, size_t received, HelloKind kind) {
  if (received != sizeof(Hello))
    return "a handshake message of " + std::to_string(received) +
           " bytes, expected " + std::to_string(sizeof(Hello));
  if (h.magic != kHandleMagic || h.kind != kind)
    return "not a horovod shm handshake";
  if (h.version != kProtocolVersion)
    return "protocol version " + std::to_string(h.version) + ", this rank " +
           "speaks " + std::to_string(kProtocolVersion);
  if (h.rank < 0) return "rank " + std::to_string(h.rank);
  if (h.status > HVD_AGAIN || h.status < HVD_ERR_SHUT_DOWN)
    return "an unknown status " + std::to_string(h.status);
  return "";
}

std::string segment_problem(const void* base, size_t size,
                            uint64_t hello_ring_bytes) {
  if (size < sizeof(SegmentHeader))
    return "a segment of " + std::to_string(size) + " bytes";
  SegmentHeader header;
  std::memcpy(static_cast<void*>(&header), base, sizeof header);
  if (header.magic != kSegmentMagic || header.version != kSegmentVersion)
    return "not a horovod shm segment (or another version)";
  uint64_t ring = header.ring_bytes;
  if (ring != hello_ring_bytes)
    return "rings of " + std::to_string(ring) + " bytes, the hello said " +
           std::to_string(hello_ring_bytes);
  if (ring < kMinRingBytes || ring > kMaxRingBytes || (ring & (ring - 1)) != 0)
    return "rings of " + std::to_string(ring) +
           " bytes (a power of two from " + std::to_string(kMinRingBytes) +
           " to " + std::to_string(kMaxRingBytes) + ")";
  SegmentHeader expected{};
  init_segment(&expected, ring);
  if (header.data_offset != expected.data_offset)
    return "ring data at offset " + std::to_string(header.data_offset) +
           ", expected " + std::to_string(expected.data_offset);
  if (segment_bytes(ring) != size)
    return "a segment of " + std::to_string(size) + " bytes for rings of " +
           std::to_string(ring);
  return "";
}

}  // namespace hvd_shm
