#include "mr_cache.h"

#include <rdma/fi_errno.h>

#include <string>

#include "horovod_plugin/boundary.h"

namespace hvd_ofi {

using hvd_plugin::fail;

MrCache::MrCache(fid_domain* domain, uint64_t mr_mode, uint32_t capacity)
    : domain_(domain),
      needed_((mr_mode & FI_MR_LOCAL) != 0),
      prov_key_((mr_mode & FI_MR_PROV_KEY) != 0),
      capacity_(capacity) {}

MrCache::~MrCache() {
  for (Registration* r : cache_) {
    if (r->mr != nullptr) fi_close(&r->mr->fid);
    delete r;
  }
}

fid_mr* MrCache::register_raw(const void* buf, size_t bytes) {
  fid_mr* mr = nullptr;
  // Without FI_MR_PROV_KEY the keys are ours to choose and must be unique.
  uint64_t key = prov_key_ ? 0 : next_key_++;
  int rc = fi_mr_reg(domain_, buf, bytes, FI_SEND | FI_RECV, 0, key, 0, &mr,
                     nullptr);
  if (rc != 0) {
    fail(HVD_ERR_SYSTEM, "ofi: fi_mr_reg of " + std::to_string(bytes) +
                             " bytes: " + fi_strerror(-rc));
  }
  return mr;
}

Registration* MrCache::register_region(void* buf, size_t bytes) {
  auto* r = new Registration;
  r->begin = static_cast<const uint8_t*>(buf);
  r->bytes = bytes;
  if (needed_ && bytes > 0) {
    try {
      r->mr = register_raw(buf, bytes);
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
  if (!needed_ || len == 0) return nullptr;
  if (given != nullptr && given->covers(buf, len)) return given->desc();
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
      hit->mr = register_raw(buf, len);
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
