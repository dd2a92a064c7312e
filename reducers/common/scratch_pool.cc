#include "scratch_pool.h"

#include <algorithm>

namespace hvd::reducers {
namespace {

// Idle buffers kept for the next tasks.
constexpr size_t kMaxIdleBuffers = 8;

}  // namespace

ScratchPool::~ScratchPool() {
  for (const Buffer& b : buffers_) host_->mem_free(host_->ctx, b.data);
  for (void* p : quarantined_) host_->mem_free(host_->ctx, p);
}

void* ScratchPool::acquire(size_t bytes) {
  if (bytes == 0) bytes = 1;
  std::lock_guard<std::mutex> lock(mutex_);
  Buffer* best = nullptr;
  for (Buffer& b : buffers_) {
    if (!b.leased && b.bytes >= bytes && (!best || b.bytes < best->bytes)) {
      best = &b;
    }
  }
  if (best != nullptr) {
    best->leased = true;
    return best->data;
  }
  void* data = host_->mem_alloc(host_->ctx, bytes, 64);
  if (data == nullptr) return nullptr;
  buffers_.push_back({data, bytes, true});
  return data;
}

void ScratchPool::release(void* buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Buffer& b : buffers_) {
    if (b.data == buffer) b.leased = false;
  }
  trim();
}

void ScratchPool::abandon(void* buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  quarantined_.push_back(buffer);
  buffers_.erase(
      std::remove_if(buffers_.begin(), buffers_.end(),
                     [&](const Buffer& b) { return b.data == buffer; }),
      buffers_.end());
}

size_t ScratchPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = 0;
  for (const Buffer& b : buffers_) total += b.bytes;
  return total;
}

void ScratchPool::trim() {
  size_t idle = 0;
  for (const Buffer& b : buffers_) idle += !b.leased;
  while (idle > kMaxIdleBuffers) {
    // Drop the smallest idle buffer: the large ones are the costly ones.
    auto smallest = buffers_.end();
    for (auto it = buffers_.begin(); it != buffers_.end(); ++it) {
      if (!it->leased &&
          (smallest == buffers_.end() || it->bytes < smallest->bytes)) {
        smallest = it;
      }
    }
    host_->mem_free(host_->ctx, smallest->data);
    buffers_.erase(smallest);
    --idle;
  }
}

}  // namespace hvd::reducers
