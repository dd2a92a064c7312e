// A persistent buffer for fused responses. It grows to the largest response
// it has carried and is then reused, registered once with every transport
// that needs registered memory.
#pragma once

#include <cstdint>

namespace hvd::p2p {
class Engine;
}

namespace hvd::runtime {

class FusionBuffer {
 public:
  explicit FusionBuffer(p2p::Engine* engine = nullptr) : engine_(engine) {}
  ~FusionBuffer();
  FusionBuffer(const FusionBuffer&) = delete;
  FusionBuffer& operator=(const FusionBuffer&) = delete;

  void set_engine(p2p::Engine* engine) { engine_ = engine; }
  // At least `bytes` (page aligned); throws hvd::Error when out of memory.
  uint8_t* ensure(uint64_t bytes);
  uint64_t capacity() const { return capacity_; }
  uint8_t* data() const { return data_; }

 private:
  void release();
  p2p::Engine* engine_;
  uint8_t* data_ = nullptr;
  uint64_t capacity_ = 0;
};

}  // namespace hvd::runtime
