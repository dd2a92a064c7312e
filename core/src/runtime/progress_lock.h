// The progress lock. Whoever holds it (the background thread, or a thread
// waiting in hvd_wait that runs the background thread's work in its place)
// owns the cycle's state: the ops in negotiation, the round in progress,
// the executor. The methods that touch that state take a
// `const ProgressLock::Held&`, which only taking the lock makes, so that
// code without the lock cannot call them.
#pragma once

#include <sched.h>

#include <atomic>
#include <optional>
#include <utility>

namespace hvd::runtime {

class ProgressLock {
 public:
  // Proof of holding the lock, which it releases when destroyed.
  class Held {
   public:
    Held(Held&& other) noexcept : lock_(std::exchange(other.lock_, nullptr)) {}
    Held& operator=(Held&&) = delete;
    Held(const Held&) = delete;
    ~Held() {
      if (lock_) lock_->release();
    }
    // Lets go of the lock while `fn` runs (another thread may take it
    // meanwhile), then takes it back, yielding until it can.
    template <typename Fn>
    void release_while(Fn&& fn) {
      lock_->release();
      std::forward<Fn>(fn)();
      lock_->acquire();
    }

   private:
    friend class ProgressLock;
    explicit Held(ProgressLock* lock) : lock_(lock) {}
    ProgressLock* lock_;
  };

  std::optional<Held> try_take() {
    if (!try_acquire()) return std::nullopt;
    return Held(this);
  }
  // Yields until taken: a holder keeps it for one step of at most a cycle,
  // and yielding gives it the core it may share with this thread.
  Held take() {
    acquire();
    return Held(this);
  }

 private:
  bool try_acquire() {
    return !taken_.load(std::memory_order_relaxed) &&
           !taken_.exchange(true, std::memory_order_acquire);
  }
  void acquire() {
    while (!try_acquire()) sched_yield();
  }
  void release() { taken_.store(false, std::memory_order_release); }

  std::atomic<bool> taken_{false};
};

}  // namespace hvd::runtime
