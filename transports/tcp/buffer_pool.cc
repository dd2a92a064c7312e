#include "buffer_pool.h"

#include <algorithm>
#include <bit>
#include <cstdlib>

namespace hvd_tcp {

namespace {

// Sizes are rounded up to a power of two (4 KiB at least), so a buffer fits
// the next message of about the same size.
uint64_t size_class(uint64_t bytes) {
  return std::bit_ceil(std::max<uint64_t>(bytes, 4096));
}

}  // namespace

BufferPool::~BufferPool() {
  for (const Free& f : free_) std::free(f.data);
}

uint8_t* BufferPool::take(uint64_t bytes, uint64_t* capacity) {
  const uint64_t want = size_class(bytes);
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->capacity >= want &&
        (best == free_.end() || it->capacity < best->capacity)) {
      best = it;
    }
  }
  if (best != free_.end()) {
    uint8_t* data = best->data;
    *capacity = best->capacity;
    kept_ -= best->capacity;
    *best = free_.back();
    free_.pop_back();
    return data;
  }
  auto* data = static_cast<uint8_t*>(std::malloc(want));
  *capacity = data != nullptr ? want : 0;
  return data;
}

void BufferPool::put(uint8_t* data, uint64_t capacity) {
  if (data == nullptr) return;
  // Over the bound, the smallest free buffers go first: the large ones are
  // the expensive ones to make again.
  while (!free_.empty() && kept_ + capacity > keep_bytes_) {
    auto smallest = std::min_element(
        free_.begin(), free_.end(),
        [](const Free& a, const Free& b) { return a.capacity < b.capacity; });
    if (smallest->capacity >= capacity) break;
    kept_ -= smallest->capacity;
    std::free(smallest->data);
    *smallest = free_.back();
    free_.pop_back();
  }
  if (kept_ + capacity > keep_bytes_) {
    std::free(data);
    return;
  }
  free_.push_back(Free{data, capacity});
  kept_ += capacity;
}

}  // namespace hvd_tcp
