#include "p2p/registration_cache.h"

#include <algorithm>

namespace hvd::p2p {

RegistrationCache::RegistrationCache(const hvd_transport_api* api,
                                     hvd_transport* transport, size_t capacity)
    : api_(api), transport_(transport), capacity_(capacity) {
  entries_.reserve(capacity_ + 8);
}

RegistrationCache::~RegistrationCache() {
  for (Entry& e : entries_) api_->mr_dereg(transport_, e.mr);
}

hvd_status RegistrationCache::register_range(uintptr_t begin, uintptr_t end,
                                             hvd_device device, bool permanent,
                                             Entry** out) {
  hvd_mr* mr = nullptr;
  hvd_status s = api_->mr_reg(transport_, reinterpret_cast<void*>(begin),
                              end - begin, device, &mr);
  if (s != HVD_OK) return s;
  ++registrations_;
  Entry e;
  e.begin = begin;
  e.end = end;
  e.device = device;
  e.mr = mr;
  e.permanent = permanent;
  e.last_use = ++clock_;
  entries_.push_back(e);
  *out = &entries_.back();
  return HVD_OK;
}

hvd_status RegistrationCache::acquire(const void* buf, size_t bytes,
                                      hvd_device device, hvd_mr** out) {
  uintptr_t begin = reinterpret_cast<uintptr_t>(buf);
  uintptr_t end = begin + std::max<size_t>(bytes, 1);
  for (Entry& e : entries_) {
    if (e.begin <= begin && end <= e.end && e.device.kind == device.kind &&
        e.device.id == device.id) {
      ++e.pins;
      e.last_use = ++clock_;
      *out = e.mr;
      return HVD_OK;
    }
  }
  evict();
  Entry* added = nullptr;
  hvd_status s = register_range(begin, end, device, false, &added);
  if (s != HVD_OK) return s;
  added->pins = 1;
  *out = added->mr;
  return HVD_OK;
}

void RegistrationCache::release(hvd_mr* mr) {
  for (Entry& e : entries_) {
    if (e.mr == mr) {
      if (e.pins > 0) --e.pins;
      return;
    }
  }
}

hvd_status RegistrationCache::add_permanent(const void* buf, size_t bytes,
                                            hvd_device device) {
  uintptr_t begin = reinterpret_cast<uintptr_t>(buf);
  Entry* added = nullptr;
  return register_range(begin, begin + std::max<size_t>(bytes, 1), device, true,
                        &added);
}

void RegistrationCache::forget(const void* buf, size_t bytes) {
  uintptr_t begin = reinterpret_cast<uintptr_t>(buf);
  uintptr_t end = begin + std::max<size_t>(bytes, 1);
  auto doomed = [&](const Entry& e) {
    return e.pins == 0 && e.begin < end && begin < e.end;
  };
  for (Entry& e : entries_) {
    if (doomed(e)) api_->mr_dereg(transport_, e.mr);
  }
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), doomed),
                 entries_.end());
}

void RegistrationCache::evict() {
  while (true) {
    size_t evictable = 0;
    Entry* oldest = nullptr;
    for (Entry& e : entries_) {
      if (e.permanent) continue;
      ++evictable;
      if (e.pins == 0 && (!oldest || e.last_use < oldest->last_use)) {
        oldest = &e;
      }
    }
    if (evictable < capacity_ || oldest == nullptr) return;
    api_->mr_dereg(transport_, oldest->mr);
    entries_.erase(entries_.begin() + (oldest - entries_.data()));
  }
}

}  // namespace hvd::p2p
