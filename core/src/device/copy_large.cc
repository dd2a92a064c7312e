#include <cstdint>
#include <cstring>

#include "device/device.h"
#include "horovod_plugin/stream_copy.h"

namespace hvd {
namespace {

// Copies that do not fit comfortably in the last-level cache gain from
// streaming stores (no read for ownership of the destination, no eviction
// of the working set); smaller ones are better served by cached memcpy,
// since the destination is usually read again soon.
constexpr size_t kStreamThreshold = size_t(4) << 20;

bool overlapping(const void* dst, const void* src, size_t bytes) {
  const uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
  return d < s + bytes && s < d + bytes;
}

}  // namespace

size_t copy_large_threshold() {
  return hvd_plugin::kHaveStreamCopy ? kStreamThreshold : SIZE_MAX;
}

void copy_large(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (overlapping(dst, src, bytes)) {
    std::memmove(dst, src, bytes);
  } else if (bytes >= copy_large_threshold()) {
    hvd_plugin::stream_copy(dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

}  // namespace hvd
