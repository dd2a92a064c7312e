// Memory the shm transport knows about: its own segments from mem_alloc()
// (which peers can map, so transfers from them need no copy through the
// ring), registrations of other memory (nothing to do for shm but remember
// the range), and peers' regions mapped here by mr_import().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "segment.h"

namespace hvd_shm {

class Connection;

struct MemoryRegion {
  uint8_t* base = nullptr;
  uint64_t bytes = 0;
  std::unique_ptr<Segment> owned;  // set for memory from mem_alloc()
  // When the range lies in a segment of ours: that segment's id and where
  // the range starts in it.
  bool in_segment = false;
  uint64_t segment = 0;
  uint64_t offset = 0;
};

struct RemoteRegion {
  Connection* conn = nullptr;
  std::shared_ptr<Segment> mapping;  // the peer's whole segment
  uint8_t* base = nullptr;           // the exported range
  uint64_t bytes = 0;
};

}  // namespace hvd_shm
