#include "runtime/fusion_buffer.h"

#include <cstdlib>
#include <string>

#include "common/error.h"
#include "p2p/engine.h"

namespace hvd::runtime {

FusionBuffer::~FusionBuffer() { release(); }

void FusionBuffer::release() {
  if (!data_) return;
  if (engine_) engine_->forget_registration(data_, capacity_);
  free(data_);
  data_ = nullptr;
  capacity_ = 0;
}

uint8_t* FusionBuffer::ensure(uint64_t bytes) {
  if (bytes <= capacity_ && data_) return data_;
  constexpr uint64_t kGrain = 1 << 20;
  uint64_t want = (std::max<uint64_t>(bytes, 1) + kGrain - 1) / kGrain * kGrain;
  release();
  void* p = nullptr;
  if (posix_memalign(&p, 4096, want) != 0) {
    throw Error(HVD_ERR_OUT_OF_MEMORY,
                "fusion buffer of " + std::to_string(want) + " bytes");
  }
  data_ = static_cast<uint8_t*>(p);
  capacity_ = want;
  if (engine_) engine_->register_permanent(data_, capacity_);
  return data_;
}

}  // namespace hvd::runtime
