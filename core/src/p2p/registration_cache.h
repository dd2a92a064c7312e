// Memory registrations of one transport that needs them
// (HVD_TRANSPORT_NEEDS_MR), so a buffer used step after step (the fusion
// buffers, a reducer's scratch) is registered once.
//
// A registration covers a range of addresses; a lookup for a range inside a
// cached one reuses it. Ranges the core owns for the runtime's life (the
// fusion buffers) are added as permanent; others are kept least recently
// used first and evicted beyond `capacity`, never while a request pins
// them. A range whose memory was freed and reallocated by its owner must be
// dropped with forget() before reuse; the runtime does so for the buffers
// it frees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "horovod/transport.h"

namespace hvd::p2p {

class Transport;

class RegistrationCache {
 public:
  RegistrationCache(const hvd_transport_api* api, hvd_transport* transport,
                    size_t capacity);
  ~RegistrationCache();  // deregisters everything
  RegistrationCache(const RegistrationCache&) = delete;
  RegistrationCache& operator=(const RegistrationCache&) = delete;

  // The registration covering [buf, buf + bytes), pinned until release().
  // Registers the range on a miss. Returns the transport's status on
  // failure (its last_error says why).
  hvd_status acquire(const void* buf, size_t bytes, hvd_device device,
                     hvd_mr** out);
  void release(hvd_mr* mr);

  // Registers a range for good (until forget or destruction).
  hvd_status add_permanent(const void* buf, size_t bytes, hvd_device device);
  // Drops every registration overlapping [buf, buf + bytes) that is not
  // pinned.
  void forget(const void* buf, size_t bytes);

  size_t size() const { return entries_.size(); }
  uint64_t registrations() const { return registrations_; }

 private:
  struct Entry {
    uintptr_t begin = 0, end = 0;
    hvd_device device{};
    hvd_mr* mr = nullptr;
    int pins = 0;
    bool permanent = false;
    uint64_t last_use = 0;
  };
  hvd_status register_range(uintptr_t begin, uintptr_t end, hvd_device device,
                            bool permanent, Entry** out);
  void evict();

  const hvd_transport_api* api_;
  hvd_transport* transport_;
  size_t capacity_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
  uint64_t registrations_ = 0;
};

}  // namespace hvd::p2p
