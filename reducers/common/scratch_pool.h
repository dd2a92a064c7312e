// Scratch buffers of a reducer, kept across tasks so that a warm reducer
// allocates nothing: a task leases buffers at post and returns them when
// freed. Memory comes from the host's allocator.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "horovod/host.h"

namespace hvd::reducers {

class ScratchPool {
 public:
  explicit ScratchPool(const hvd_host* host) : host_(host) {}
  ~ScratchPool();
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;

  // At least `bytes` (64-byte aligned); nullptr when out of memory.
  void* acquire(size_t bytes);
  void release(void* buffer);
  // The buffer may still be written by a transfer that never finished:
  // it is not reused, and freed only with the pool (the reducer's finalize,
  // which the core calls once its data path has stopped).
  void abandon(void* buffer);
  size_t cached_bytes() const;

 private:
  struct Buffer {
    void* data;
    size_t bytes;
    bool leased;
  };
  void trim();  // frees idle buffers past the cache limits; mutex held

  const hvd_host* host_;
  mutable std::mutex mutex_;
  std::vector<Buffer> buffers_;
  std::vector<void*> quarantined_;
};

}  // namespace hvd::reducers
