// Buffers for messages that arrive before their receive is posted. A buffer
// given back is kept (up to a bound) and handed out again, so steady traffic
// neither allocates nor touches fresh pages: with large messages, page faults
// on new buffers cost more than the copy out of them.
#pragma once

#include <cstdint>
#include <vector>

namespace hvd_tcp {

class BufferPool {
 public:
  // Keeps at most `keep_bytes` of free buffers.
  explicit BufferPool(uint64_t keep_bytes) : keep_bytes_(keep_bytes) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least `bytes` (> 0), its size in *capacity; nullptr when
  // out of memory.
  uint8_t* take(uint64_t bytes, uint64_t* capacity);
  // Gives back what take() handed out (nullptr: nothing).
  void put(uint8_t* data, uint64_t capacity);

  uint64_t kept_bytes() const { return kept_; }

 private:
  struct Free {
    uint8_t* data;
    uint64_t capacity;
  };
  std::vector<Free> free_;
  uint64_t kept_ = 0;
  uint64_t keep_bytes_;
};

}  // namespace hvd_tcp
