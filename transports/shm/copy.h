// Copies on the large path: streaming stores (hvd_plugin::stream_copy) where
// the destination is a large buffer nobody touches soon (a receive of a big
// message, a one-sided put or get), and plain memcpy where the destination
// is the ring, which the peer reads at once from the cache.
#pragma once

#include <cstddef>
#include <cstring>

#include "horovod_plugin/stream_copy.h"

namespace hvd_shm {

// Below this a streaming copy's fence and alignment prologue cost more than
// they save.
constexpr size_t kStreamingMinimum = 4096;

// memcpy, or a streaming copy when `streaming` and the copy is long enough.
inline void copy_bytes(void* dst, const void* src, size_t bytes,
                       bool streaming) {
  if (streaming && bytes >= kStreamingMinimum) {
    hvd_plugin::stream_copy(dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

}  // namespace hvd_shm
