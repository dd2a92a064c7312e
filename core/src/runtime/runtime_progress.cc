// Who runs the cycle, and when: the background thread's loop, and a
// caller waiting in hvd_wait that runs it in the background thread's
// place. On a shared core, handing a small op to the background thread and
// its result back costs two thread switches, several microseconds, far
// more than the op; the caller that drives its own op costs none.
//
// Whoever holds the progress lock owns the background thread's state. It
// is taken by try-lock and released without a system call: a caller that
// finds it held yields rather than sleeps, and the background thread gives
// it up only where it would yield or sleep anyway (never inside a cycle or
// a transport's wait, which are not safe to share).
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "control/control_plane.h"
#include "p2p/engine.h"
#include "p2p/transport.h"
#include "plugin/abi_minors.h"
#include "runtime/adapters.h"
#include "runtime/executor.h"
#include "runtime/handle.h"
#include "runtime/reducers.h"
#include "runtime/response_cache.h"
#include "runtime/runtime.h"

namespace hvd::runtime {
namespace {

// The runtime this thread drives in the background thread's place (its
// completion callbacks run here), else null.
thread_local const Runtime* t_driving = nullptr;

std::chrono::steady_clock::time_point from_ns(int64_t ns) {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
}

// An idle job slows its rounds down: every kIdleRoundsPerStep rounds in a
// row that negotiated nothing while the data path was idle double the time
// between them, up to kIdleCycleMax. Rounds are collective, so a rank that
// waits for a late peer (it goes on to the next round at once) completes
// one only as often as the idle peer comes, and sleeps in between: at
// cycle_time each round costs it a few tens of microseconds (the spin
// before the sleep, the system calls), 5-10% of a core at 1 ms. The first
// op after a long idle time waits at most kIdleCycleMax for ranks that
// have nothing of their own to submit; a rank submitting an op starts a
// round at once.
constexpr uint64_t kIdleRoundsPerStep = 16;
constexpr int kIdleDoublingsMax = 4;
constexpr auto kIdleCycleMax = std::chrono::milliseconds(16);

// A thread that submits a step op by op (a training loop's gradients, a
// few microseconds of Python apart) has more to come while its latest op
// is recent. A round started on the first of them splits the step into
// several rounds, each a meeting of every rank that waits for the slowest
// one's background thread, which shares its core with a thread that is
// busy submitting. So the background thread starts no round while ops keep
// coming less than cycle_time / kSubmitGapsPerCycle apart, for at most
// kBatchCyclesMax cycle times from the first; a thread that waits for its
// ops negotiates them at once (drive_until_done).
constexpr int kSubmitGapsPerCycle = 10;
constexpr int kBatchCyclesMax = 10;

}  // namespace

std::string Runtime::background_thread_only_plugin() const {
  for (const auto& t : engine_->transports()) {
    if (!t->any_thread()) return t->describe();
  }
  for (size_t i = 0; i < reducers_->size(); ++i) {
    if (!called_from_any_thread(reducers_->at(i).api()))
      return reducers_->at(i).describe();
  }
  return "";
}

bool Runtime::on_progress_thread() const {
  return t_driving == this || std::this_thread::get_id() == thread_.get_id();
}

void Runtime::rethrow_caller_error(const Held&) {
  if (caller_error_) std::rethrow_exception(std::exchange(caller_error_, {}));
}

void Runtime::throw_if_peer_failed() {
  if (!failed_) return;
  std::lock_guard<std::mutex> lock(failure_mutex_);
  throw Error(HVD_ERR_PEER_FAILED, failure_message_, failure_rank_);
}

bool Runtime::drive_until_done(hvd_handle_s* handle,
                               std::chrono::nanoseconds spin,
                               std::chrono::steady_clock::time_point give_up) {
  auto until = std::min(give_up, std::chrono::steady_clock::now() + spin);
  // A completion callback that waits must not take the lock it runs under;
  // plugins built before 1.4 are called from the background thread only.
  const bool may_drive = callers_may_drive_ && !on_progress_thread() &&
                         !adapter_wants_background_thread();
  bool left_work = false;  // for the background thread, after this thread
  // The background thread leaves the next round to this one meanwhile.
  if (may_drive) ++callers_driving_;
  while (!handle->finished.load(std::memory_order_acquire)) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) break;
    std::optional<Held> progress =
        may_drive ? progress_.try_take() : std::optional<Held>();
    if (!progress) {
      sched_yield();
      continue;
    }
    bool moved = false;
    if (!progress_closed_) {
      t_driving = this;
      try {
        moved = caller_step(*progress, until);
        if (moved) {
          // Spinning is for a wait without progress: an op that moves
          // (or a round that took a while to gather) goes on.
          const auto after = std::chrono::steady_clock::now();
          until = std::min(give_up, after + spin);
          caller_moved_ns_.store(after.time_since_epoch().count(),
                                 std::memory_order_relaxed);
        }
        left_work = !executor_->idle() || awaiting_others() ||
                    !waiting_.empty() || has_new_ || round_ != Round::kNone;
      } catch (...) {
        // The background thread fails everything, as for its own errors.
        caller_error_ = std::current_exception();
        progress_closed_ = true;
        left_work = true;
      }
      t_driving = nullptr;
    }
    const bool closed = progress_closed_;
    progress.reset();
    if (closed) break;
    if (!moved) sched_yield();
  }
  if (may_drive) --callers_driving_;
  // What is left (this op, or others this thread drove along) goes back
  // to the background thread, which may sleep until its next cycle.
  if (left_work) wake();
  return handle->finished.load(std::memory_order_acquire);
}

bool Runtime::caller_step(const Held& progress,
                          std::chrono::steady_clock::time_point until) {
  bool moved = drive(progress);
  throw_if_peer_failed();
  // The end of the job is the background thread's to negotiate and carry
  // out.
  if (shutdown_requested_ || shutdown_seen_) return moved;
  // The ops that wait for other ranks, or new ones, need the next round;
  // a busy data path is driven first (the background thread fuses what
  // comes meanwhile; this thread has nothing more to add).
  if (round_ != Round::kNone) return cycle(progress, until) || moved;
  if (executor_->idle() && (has_new_.exchange(false) || awaiting_others())) {
    cycle(progress, until);
    moved = true;
  }
  return moved;
}

std::chrono::steady_clock::time_point Runtime::batch_end() const {
  return std::min(
      from_ns(first_new_ns_.load(std::memory_order_relaxed)) +
          kBatchCyclesMax * cycle_time_,
      from_ns(last_new_ns_.load(std::memory_order_relaxed)) +
          cycle_time_ / kSubmitGapsPerCycle);
}

std::chrono::nanoseconds Runtime::cycle_interval() const {
  const int doublings = static_cast<int>(
      std::min<uint64_t>(idle_rounds_ / kIdleRoundsPerStep, kIdleDoublingsMax));
  if (doublings == 0) return cycle_time_;
  return std::max<std::chrono::nanoseconds>(
      cycle_time_, std::min<std::chrono::nanoseconds>(
                       cycle_time_ * (1 << doublings), kIdleCycleMax));
}

void Runtime::wait_for_next_cycle(Held& progress) {
  // Timed from the last cycle's start, whichever thread ran it. Idle, the
  // next cycle comes cycle_time after it, or for new ops once they stop
  // coming (batch_end). Busy, the data path goes on and negotiation
  // waits: for ops that came meanwhile until cycle_time (they fuse with
  // what else comes by then), else until the data path is idle but no
  // longer than kBusyCycles cycles, so a rank in negotiation is waited for
  // at most that long by a busy one, and a rank that went idle needs
  // nothing more from the others' tasks.
  //
  // After work (this thread's or a driving caller's), an idle rank spins
  // for spin_time before it sleeps: the next op usually comes within
  // microseconds of the last one's completion, and a wake-up from sleep
  // costs tens of them. A rank with ops that wait for other ranks goes on
  // to the next round at once (the round ends as soon as the last rank
  // arrives) rather than making a
  // rank that arrives later wait for its cycle time; once rounds have come
  // back empty for a while (ranks in different calls, a late peer), it
  // keeps the slowed cycle too, so that ranks waiting for each other do
  // not run round after round.
  constexpr int kBusyCycles = 10;
  auto spin_until = std::chrono::steady_clock::time_point::min();
  while (true) {
    bool moved = drive(progress);
    throw_if_peer_failed();
    if (shutdown_requested_ || shutdown_seen_) return;
    // A round a waiting caller began and left.
    if (round_ != Round::kNone) return;
    const auto deadline = last_cycle_ + cycle_interval();
    const auto busy_deadline = last_cycle_ + kBusyCycles * cycle_time_;
    auto now = std::chrono::steady_clock::now();
    if (moved) spin_until = now + spin_time_;
    spin_until = std::max(
        spin_until,
        from_ns(caller_moved_ns_.load(std::memory_order_relaxed)) + spin_time_);
    // New ops still coming in: no round takes part of them.
    const bool gathering = has_new_ && now < batch_end();
    if (executor_->idle()) {
      // A waiting thread runs the next round itself (on a shared core,
      // without a switch back to this one).
      const bool caller_drives = callers_driving_ > 0;
      if (!caller_drives && !gathering) {
        if (now >= deadline || has_new_.exchange(false)) return;
        // Another rank began a round and waits for this one in it.
        if (round_called_.exchange(false)) control_->receive();
        if (control_->round_called(rounds_begun_ + 1)) return;
        if (now >= spin_until && awaiting_others() &&
            idle_rounds_ < kIdleRoundsPerStep) {
          return;
        }
      }
      if (caller_drives || (now < spin_until && !gathering)) {
        // Yielding: the caller's thread may need this core to take the
        // last result, enqueue the next op and drive it.
        progress.release_while([] { sched_yield(); });
        rethrow_caller_error(progress);
        continue;
      }
      // Gathering, it sleeps to the batch's end: a newer op only moves
      // that end, so it does not write the wake fd.
      auto left = (gathering ? batch_end() : deadline) - now;
      timespec ts;
      ts.tv_sec = static_cast<time_t>(
          std::chrono::duration_cast<std::chrono::seconds>(left).count());
      ts.tv_nsec = static_cast<long>((left - std::chrono::seconds(ts.tv_sec)) /
                                     std::chrono::nanoseconds(1));
      // Not gathering, a frame on the control plane's links wakes it too:
      // a peer may call it to a round (round_called).
      std::vector<pollfd> polls{{wake_fd_, POLLIN, 0}};
      if (!gathering) {
        round_fds_.clear();
        control_->wait_fds(round_fds_);
        for (int fd : round_fds_) polls.push_back({fd, POLLIN, 0});
      }
      sleeping_ = !gathering;
      progress.release_while([&] {
        // An enqueue from here on sees sleeping_ and writes the wake fd.
        if (gathering || !has_new_)
          ppoll(polls.data(), polls.size(), &ts, nullptr);
        sleeping_ = false;
      });
      rethrow_caller_error(progress);
      drain_wake_fd();
      for (size_t i = 1; i < polls.size(); ++i) {
        if (polls[i].revents != 0) round_called_ = true;
      }
    } else {
      if (now >= busy_deadline) return;
      // Ops that came while the data path is busy are negotiated at the
      // next cycle, with whatever else comes by then.
      if (now >= deadline && !gathering && has_new_.exchange(false)) return;
      if (!moved) {
        // Device work is polled (its events have no file descriptor).
        constexpr auto kDevicePoll = std::chrono::microseconds(50);
        auto left =
            (has_new_ ? std::max(deadline, batch_end()) : busy_deadline) - now;
        if (executor_->awaiting_device()) {
          left =
              std::min<std::chrono::steady_clock::duration>(left, kDevicePoll);
        }
        sleeping_ = true;
        engine_->wait(left, wake_fd_);
        sleeping_ = false;
        drain_wake_fd();
      }
    }
  }
}

void Runtime::drain(const Held& progress) {
  while (!executor_->idle()) {
    bool moved = drive(progress);
    throw_if_peer_failed();
    if (!moved) {
      engine_->wait(std::chrono::milliseconds(1), wake_fd_);
      drain_wake_fd();
    }
  }
}

void Runtime::loop() {
  pthread_setname_np(pthread_self(), "hvd-background");
  // Held on every path below: no caller drives a runtime whose thread has
  // ended.
  Held progress = progress_.take();
  try {
    while (true) {
      // A caller's round may have been the one that saw the end.
      if (!shutdown_seen_) cycle(progress);
      if (shutdown_seen_) {
        drain(progress);
        if (cache_->capacity() > 0) {
          HVD_LOG(INFO) << cache_->summary();
        }
        HVD_LOG(INFO) << "negotiation: " << control_rounds_
                      << " rounds over the control plane, " << bit_rounds_
                      << " by cache bits alone";
        std::string who = shutdown_rank_ == rank_
                              ? "this rank"
                              : "rank " + std::to_string(shutdown_rank_);
        if (shutdown_rank_ != rank_ && has_ops_in_flight()) {
          // Another rank left early: the ops it leaves behind fail here.
          HVD_LOG(ERROR) << who << " shut down (hvd_shutdown) while rank "
                         << rank_ << " still had ops in flight";
        }
        fail_everything(progress, HVD_ERR_SHUT_DOWN,
                        "horovod was shut down (hvd_shutdown on " + who + ")");
        break;
      }
      wait_for_next_cycle(progress);
    }
  } catch (const Error& e) {
    HVD_LOG(ERROR) << e.what();
    fail_everything(progress, e.status(), e.what());
  } catch (const std::exception& e) {
    HVD_LOG(ERROR) << "background thread: " << e.what();
    fail_everything(progress, HVD_ERR_INTERNAL,
                    std::string("background thread: ") + e.what());
  }
  progress_closed_ = true;
}

}  // namespace hvd::runtime
