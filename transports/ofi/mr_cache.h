// Memory registration under the provider's MR mode (the endpoint plan).
// With FI_MR_LOCAL every send and receive needs a descriptor: the caller's
// registration when it covers the buffer, else one from a small cache of
// recent registrations (least recently used goes first, never while a
// transfer holds it). Without FI_MR_LOCAL host memory is not registered and
// descriptors are null; device memory always is (FI_HMEM), and the caller
// passes that registration with each transfer. Keys are the provider's
// under FI_MR_PROV_KEY, unique counters otherwise; under FI_MR_ENDPOINT each
// region is bound to the endpoint and enabled before use.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "endpoint_plan.h"
#include "horovod/abi.h"

namespace hvd_ofi {

struct Registration {
  fid_mr* mr = nullptr;  // null when the provider needs none
  const uint8_t* begin = nullptr;
  size_t bytes = 0;
  uint32_t pins = 0;  // transfers in flight using it (cache entries)
  uint64_t last_use = 0;

  void* desc() const { return mr != nullptr ? fi_mr_desc(mr) : nullptr; }
  bool covers(const void* buf, size_t len) const {
    auto* p = static_cast<const uint8_t*>(buf);
    return p >= begin && p + len <= begin + bytes;
  }
};

class MrCache {
 public:
  MrCache(fid_domain* domain, fid_ep* ep, const EndpointPlan& plan,
          uint32_t capacity);
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  bool needed() const { return needed_; }
  // A registration of its own for mr_reg (a dummy for host memory without
  // FI_MR_LOCAL).
  Registration* register_region(void* buf, size_t bytes, hvd_device device);
  void deregister(Registration* r);
  // The descriptor for a transfer of [buf, buf + len): from `given` when it
  // covers the range, else pinned from the cache (*pinned is set; unpin it
  // when the transfer ends). Null when the provider needs none.
  void* descriptor(Registration* given, const void* buf, size_t len,
                   Registration** pinned);
  void unpin(Registration* r);

 private:
  fid_mr* register_raw(const void* buf, size_t bytes, hvd_device device);

  fid_domain* domain_;
  fid_ep* ep_;
  bool needed_;
  bool prov_key_;
  bool bind_;
  uint32_t capacity_;
  uint64_t next_key_ = 1;
  uint64_t clock_ = 0;
  std::vector<Registration*> cache_;
};

}  // namespace hvd_ofi
