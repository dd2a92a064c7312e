// Message contents that tell where every byte came from: a 64-bit word per
// position, mixed with a seed naming the sender and the message, so a byte
// from the wrong message or the wrong offset is caught.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace hvd_conformance {

uint64_t seed_of(uint64_t a, uint64_t b, uint64_t c, uint64_t d);
void fill(void* buf, size_t bytes, uint64_t seed);
// Offset of the first byte that differs from fill(seed), or -1.
int64_t verify(const void* buf, size_t bytes, uint64_t seed);

// Page-aligned memory, uninitialised.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes);
  uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_ = 0;
};

}  // namespace hvd_conformance
