// Copies on the large path. glibc's memcpy switches to non-temporal stores
// only past a threshold tied to the cache size, and below it a copy of tens
// of MiB runs at a fraction of the memory bandwidth (each destination line is
// first read into the cache, then written back). stream_copy() writes the
// destination with streaming stores instead; the shm transport uses it where
// the destination is a large buffer nobody touches soon (a receive of a big
// message, a one-sided put or get), and plain memcpy where the destination is
// the ring, which the peer reads at once from the cache.
#pragma once

#include <cstddef>

namespace hvd_shm {

// Like memcpy (no overlap), with non-temporal stores for the bulk.
void stream_copy(void* dst, const void* src, size_t bytes);

// memcpy, or stream_copy when `streaming`.
void copy_bytes(void* dst, const void* src, size_t bytes, bool streaming);

}  // namespace hvd_shm
