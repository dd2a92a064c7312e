// Who runs the cycle, and when: the background thread's loop, and a
// caller waiting in hvd_wait that runs it in the background thread's
// place. On a shared core, handing a small op to the background thread and
// its result back costs two thread switches, several microseconds, far
// more than the op; the caller that drives its own op costs none.
//
// Whoever holds the progress lock owns the cycle's state. It is taken by
// try-lock and released without a system call: a caller that finds it
// held yields rather than sleeps, and the background thread gives it up
// only where it would yield or sleep anyway (never inside a round or a
// transport's wait, which are not safe to share).
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <thread>
#include <vector>

#include "horovod/horovod.h"
#include "runtime/progress_lock.h"

namespace hvd {
class ControlPlane;
namespace p2p {
class Engine;
}
}  // namespace hvd

namespace hvd::runtime {

class Cycle;
class Executor;
class Failure;
class OpIntake;
class ProcessSets;
class Wakeup;

class Driver {
 public:
  struct Parts {
    int32_t rank;
    Cycle& cycle;
    Failure& failure;
    OpIntake& intake;
    ProcessSets& sets;
    Executor& executor;
    ControlPlane& control;
    p2p::Engine& engine;
    Wakeup& wakeup;
    std::chrono::nanoseconds spin_time;
    // Every transport and reducer may be called from a waiting thread
    // (ABI 1.4).
    bool callers_may_drive;
  };
  explicit Driver(const Parts& parts);
  ~Driver();  // joins the background thread (stop() first)
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // Starts the background thread.
  void start();
  // Asks the job's end of the other ranks (the next round carries it) and
  // joins the background thread once it has failed what is left.
  void stop();
  // Any thread waiting for `handle`: runs the background thread's work in
  // its place, while no other thread runs it, until the handle finishes,
  // nothing has moved for `spin`, or `give_up` has come. True when it
  // finished.
  bool drive_until_done(hvd_handle_s* handle, std::chrono::nanoseconds spin,
                        std::chrono::steady_clock::time_point give_up);
  // The background thread, or a thread driving in its place: where
  // completion callbacks run.
  bool on_progress_thread() const;

 private:
  using Held = ProgressLock::Held;
  void loop();  // the background thread
  // One step of a waiting caller's driving, within `until`; true when
  // something moved.
  bool caller_step(const Held& progress,
                   std::chrono::steady_clock::time_point until);
  // What a driving caller's step threw, for the background thread (taking
  // the lock back) to fail everything with.
  void rethrow_caller_error(const Held& progress);
  // Lets go of the lock while it spins or sleeps (driver_loop.cc).
  void wait_for_next_cycle(Held& progress);
  // When the ops coming in have stopped coming, or have waited long
  // enough: the background thread negotiates them then, not one by one.
  std::chrono::steady_clock::time_point batch_end(const Held& progress) const;

  const int32_t rank_;
  Cycle& cycle_;
  Failure& failure_;
  OpIntake& intake_;
  ProcessSets& sets_;
  Executor& executor_;
  ControlPlane& control_;
  p2p::Engine& engine_;
  Wakeup& wakeup_;
  const std::chrono::nanoseconds spin_time_;
  const bool callers_may_drive_;

  std::vector<int> wait_fds_;  // what a sleep wakes on (driver_loop.cc)
  std::thread thread_;
  ProgressLock progress_;
  // When a driving caller last moved something (steady clock, ns): the
  // background thread spins on from there rather than sleep.
  std::atomic<int64_t> caller_moved_ns_{0};
  std::atomic<int> callers_driving_{0};  // threads in drive_until_done
  // The progress lock's.
  bool progress_closed_ = false;     // the loop has ended: no caller drives
  std::exception_ptr caller_error_;  // a caller's step threw it
};

}  // namespace hvd::runtime
