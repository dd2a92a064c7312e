// The state behind a plugin's abort(): the first (reason, peer) wins and
// stays; later trips change nothing. Any thread may trip it or read it; the
// pair lives in one atomic word, so a reader never sees the reason of one
// abort with the peer of another.
//
//   hvd_plugin::AbortLatch latch_;
//   void abort(hvd_status reason, int32_t peer) { latch_.trip(reason, peer); }
//   if (hvd_status a = latch_.reason(); a != HVD_OK) return refuse(a, ...);
//
// A transport that must also act on the abort from its own thread (fail its
// connections, drain a wake-up fd) calls apply() there, which runs the
// action once, on the first call after the trip.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "horovod/abi.h"

namespace hvd_plugin {

class AbortLatch {
 public:
  // Any thread. HVD_OK and HVD_AGAIN are no failure, so they latch as
  // HVD_ERR_ABORTED. True for the call that tripped the latch.
  bool trip(hvd_status reason, int32_t peer) noexcept {
    if (reason == HVD_OK || reason == HVD_AGAIN) reason = HVD_ERR_ABORTED;
    uint64_t none = 0;
    return word_.compare_exchange_strong(none, pack(reason, peer),
                                         std::memory_order_acq_rel);
  }

  bool tripped() const noexcept {
    return word_.load(std::memory_order_acquire) != 0;
  }

  // HVD_OK until tripped, then the first reason (its peer, -1 when none was
  // named, in *peer).
  hvd_status reason(int32_t* peer = nullptr) const noexcept {
    uint64_t word = word_.load(std::memory_order_acquire);
    if (peer != nullptr) *peer = word == 0 ? -1 : peer_of(word);
    return word == 0 ? HVD_OK : reason_of(word);
  }

  int32_t peer() const noexcept {
    int32_t p = -1;
    reason(&p);
    return p;
  }

  // The owner's thread only: tripped, but apply() has not run yet.
  bool pending() const noexcept { return !applied_ && tripped(); }

  // The owner's thread only: once tripped, runs act(reason, peer) on the
  // first call (marked done before it runs, so act may call apply()
  // again). Returns reason().
  template <typename Act>
  hvd_status apply(Act&& act) {
    int32_t p = -1;
    hvd_status r = reason(&p);
    if (r != HVD_OK && !applied_) {
      applied_ = true;
      act(r, p);
    }
    return r;
  }

 private:
  // A failure status is never 0, so neither is the word once tripped.
  static uint64_t pack(hvd_status reason, int32_t peer) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(reason)) << 32) |
           static_cast<uint32_t>(peer);
  }
  static hvd_status reason_of(uint64_t word) {
    return static_cast<hvd_status>(static_cast<int32_t>(word >> 32));
  }
  static int32_t peer_of(uint64_t word) {
    return static_cast<int32_t>(static_cast<uint32_t>(word));
  }

  std::atomic<uint64_t> word_{0};
  bool applied_ = false;
};

// "aborted (reason -5, rank 2)": how a transport words an abort for the
// requests it fails.
inline std::string abort_text(hvd_status reason, int32_t peer) {
  return "aborted (reason " + std::to_string(reason) +
         (peer >= 0 ? ", rank " + std::to_string(peer) + ")" : ")");
}

}  // namespace hvd_plugin
