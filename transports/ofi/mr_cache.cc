#include "mr_cache.h"

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <string>

#include "horovod_plugin/boundary.h"

namespace hvd_ofi {

using hvd_plugin::fail;

MrCache::MrCache(fid_domain* domain, fid_ep* ep, const EndpointPlan& plan,
                 uint32_t capacity)
    : domain_(domain),
      ep_(ep),
      needed_(plan.register_local),
      prov_key_(plan.provider_keys),
      bind_(plan.bind_to_endpoint),
      capacity_(capacity) {}

MrCache::~MrCache() {
  for (Registration* r : cache_) {
    if (r->mr != nullptr) fi_close(&r->mr->fid);
    delete r;
  }
}

fid_mr* MrCache::register_raw(const void* buf, size_t bytes,
                              hvd_device device) {
  iovec iov{const_cast<void*>(buf), bytes};
  fi_mr_attr attr{};
  attr.mr_iov = &iov;
  attr.iov_count = 1;
  attr.access = FI_SEND | FI_RECV;
  // Without FI_MR_PROV_KEY the keys are ours to choose and must be unique.
  attr.requested_key = prov_key_ ? 0 : next_key_++;
  if (device.kind == HVD_MEM_CUDA) {
    attr.iface = FI_HMEM_CUDA;
    attr.device.cuda = device.id;
  }
  fid_mr* mr = nullptr;
  int rc = fi_mr_regattr(domain_, &attr, 0, &mr);
  if (rc == 0 && bind_) {
    rc = fi_mr_bind(mr, &ep_->fid, 0);
    if (rc == 0) rc = fi_mr_enable(mr);
    if (rc != 0) fi_close(&mr->fid);
  }
  if (rc != 0) {
    fail(HVD_ERR_SYSTEM, "ofi: registering " + std::to_string(bytes) +
                             " bytes of " +
                             (device.kind == HVD_MEM_CUDA ? "cuda" : "host") +
                             " memory: " + fi_strerror(-rc));
  }
  return mr;
}

Registration* MrCache::register_region(void* buf, size_t bytes,
                                       hvd_device device) {
  auto* r = new Registration;
  r->begin = static_cast<const uint8_t*>(buf);
  r->bytes = bytes;
  if ((needed_ || device.kind != HVD_MEM_HOST) && bytes > 0) {
    try {
      r->mr = register_raw(buf, bytes, device);
    } catch (...) {
      delete r;
      throw;
    }
  }
  return r;
}

void MrCache::deregister(Registration* r) {
  if (r->mr != nullptr) fi_close(&r->mr->fid);
  delete r;
}

void* MrCache::descriptor(Registration* given, const void* buf, size_t len,
                          Registration** pinned) {
  *pinned = nullptr;
  // The caller's own region first: device memory has one even where host
  // memory needs none.
  if (given != nullptr && given->covers(buf, len)) return given->desc();
  if (!needed_ || len == 0) return nullptr;
  Registration* hit = nullptr;
  for (Registration* r : cache_) {
    if (r->covers(buf, len)) hit = r;
  }
  if (hit == nullptr) {
    if (cache_.size() >= capacity_) {
      Registration* oldest = nullptr;
      size_t at = 0;
      for (size_t i = 0; i < cache_.size(); ++i) {
        Registration* r = cache_[i];
        if (r->pins == 0 &&
            (oldest == nullptr || r->last_use < oldest->last_use)) {
          oldest = r;
          at = i;
        }
      }
      if (oldest != nullptr) {
        cache_.erase(cache_.begin() + static_cast<std::ptrdiff_t>(at));
        deregister(oldest);
      }
    }
    hit = new Registration;
    hit->begin = static_cast<const uint8_t*>(buf);
    hit->bytes = len;
    try {
      hit->mr = register_raw(buf, len, hvd_device{HVD_MEM_HOST, 0});
    } catch (...) {
      delete hit;
      throw;
    }
    cache_.push_back(hit);
  }
  hit->last_use = ++clock_;
  ++hit->pins;
  *pinned = hit;
  return hit->desc();
}

void MrCache::unpin(Registration* r) {
  if (r != nullptr && r->pins > 0) --r->pins;
}

}  // namespace hvd_ofi
