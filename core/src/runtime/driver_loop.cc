// The background thread's loop: a cycle, then the wait for the next one
// (spinning, sleeping, or leaving the cycle to a waiting caller), until
// the job ends or fails.
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <span>
#include <vector>

#include "common/error.h"
#include "common/log.h"
#include "control/control_plane.h"
#include "p2p/engine.h"
#include "runtime/cycle.h"
#include "runtime/driver.h"
#include "runtime/executor.h"
#include "runtime/failure.h"
#include "runtime/op_intake.h"
#include "runtime/process_sets.h"
#include "runtime/wakeup.h"

namespace hvd::runtime {
namespace {

std::chrono::steady_clock::time_point from_ns(int64_t ns) {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
}

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

// What a sleep of the loop wakes on: the wake fd first, then, where a peer
// may call this rank to a round, the control plane's links.
void sleep_fds(const Wakeup& wakeup, const ControlPlane& control,
               bool with_links, std::vector<int>& fds) {
  fds.clear();
  fds.push_back(wakeup.fd());
  if (with_links) control.wait_fds(fds);
}

// After a sleep on sleep_fds: a frame on a link may be a summons.
void note_round_calls(Wakeup& wakeup, std::span<const pollfd> polled) {
  for (size_t i = 1; i < polled.size(); ++i) {
    if (polled[i].revents != 0) wakeup.note_round_call();
  }
}

// Whether another rank began round `next` and waits for this one in it
// (what came on the links is read first where a summons may be there).
// Answering, it passes the call on to its own neighbours in the tree: the
// round it begins carries nothing new and so calls nobody (Cycle::run),
// and the ranks further along would wait for their own deadlines.
bool called_to_round(Wakeup& wakeup, ControlPlane& control, uint64_t next) {
  if (wakeup.take_round_call()) control.receive();
  if (!control.round_called(next)) return false;
  control.summon(next);
  return true;
}

}  // namespace

std::chrono::steady_clock::time_point Driver::batch_end(
    const Held& progress) const {
  const std::chrono::nanoseconds cycle_time = cycle_.cycle_time(progress);
  return std::min(intake_.first_new() + kBatchCyclesMax * cycle_time,
                  intake_.last_new() + cycle_time / kSubmitGapsPerCycle);
}

void Driver::wait_for_next_cycle(Held& progress) {
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
  //
  // Idle or busy, a rank that is not gathering joins a round another rank
  // began as soon as it is called to it: the round drives the data path
  // while it waits (Cycle::wait_round), and the ranks already in it would
  // otherwise wait for this one's deadline.
  constexpr int kBusyCycles = 10;
  auto spin_until = std::chrono::steady_clock::time_point::min();
  while (true) {
    bool moved = cycle_.drive(progress);
    failure_.throw_if_failed();
    if (cycle_.shutdown_requested() || cycle_.shutdown_seen(progress)) return;
    // A round a waiting caller began and left.
    if (cycle_.round_open(progress)) return;
    const auto last_cycle = cycle_.last_began(progress);
    const auto deadline = last_cycle + cycle_.interval(progress);
    const auto busy_deadline =
        last_cycle + kBusyCycles * cycle_.cycle_time(progress);
    auto now = std::chrono::steady_clock::now();
    if (moved) spin_until = now + spin_time_;
    spin_until = std::max(
        spin_until,
        from_ns(caller_moved_ns_.load(std::memory_order_relaxed)) + spin_time_);
    // New ops still coming in: no round takes part of them.
    const bool gathering = intake_.has_new() && now < batch_end(progress);
    if (executor_.idle()) {
      // A waiting thread runs the next round itself (on a shared core,
      // without a switch back to this one).
      const bool caller_drives = callers_driving_ > 0;
      if (!caller_drives && !gathering) {
        if (now >= deadline || intake_.take_new()) return;
        if (called_to_round(wakeup_, control_,
                            cycle_.rounds_begun(progress) + 1)) {
          return;
        }
        if (now >= spin_until && sets_.awaiting_others() &&
            !cycle_.slowed(progress)) {
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
      auto left = (gathering ? batch_end(progress) : deadline) - now;
      timespec ts;
      ts.tv_sec = static_cast<time_t>(
          std::chrono::duration_cast<std::chrono::seconds>(left).count());
      ts.tv_nsec = static_cast<long>((left - std::chrono::seconds(ts.tv_sec)) /
                                     std::chrono::nanoseconds(1));
      sleep_fds(wakeup_, control_, !gathering, wait_fds_);
      std::vector<pollfd> polls;
      for (int fd : wait_fds_) polls.push_back({fd, POLLIN, 0});
      wakeup_.set_sleeping(!gathering);
      progress.release_while([&] {
        // An enqueue from here on sees it sleeping and writes the wake fd.
        if (gathering || !intake_.has_new())
          ppoll(polls.data(), polls.size(), &ts, nullptr);
        wakeup_.set_sleeping(false);
      });
      rethrow_caller_error(progress);
      wakeup_.drain();
      note_round_calls(wakeup_, polls);
    } else {
      if (now >= busy_deadline) return;
      // Ops that came while the data path is busy are negotiated at the
      // next cycle, with whatever else comes by then.
      if (now >= deadline && !gathering && intake_.take_new()) return;
      if (!gathering && called_to_round(wakeup_, control_,
                                        cycle_.rounds_begun(progress) + 1)) {
        return;
      }
      if (!moved) {
        // Device work is polled (its events have no file descriptor).
        constexpr auto kDevicePoll = std::chrono::microseconds(50);
        auto left = (intake_.has_new() ? std::max(deadline, batch_end(progress))
                                       : busy_deadline) -
                    now;
        if (executor_.awaiting_device()) {
          left =
              std::min<std::chrono::steady_clock::duration>(left, kDevicePoll);
        }
        sleep_fds(wakeup_, control_, !gathering, wait_fds_);
        wakeup_.set_sleeping(true);
        const std::span<const pollfd> polled = engine_.wait(left, wait_fds_);
        wakeup_.set_sleeping(false);
        wakeup_.drain();
        note_round_calls(wakeup_, polled);
      }
    }
  }
}

void Driver::loop() {
  pthread_setname_np(pthread_self(), "hvd-background");
  // Held on every path below: no caller drives a runtime whose thread has
  // ended.
  Held progress = progress_.take();
  try {
    while (true) {
      // A caller's round may have been the one that saw the end.
      if (!cycle_.shutdown_seen(progress)) cycle_.run(progress);
      if (cycle_.shutdown_seen(progress)) {
        cycle_.drain(progress);
        cycle_.log_summary(progress);
        const int32_t shutdown_rank = cycle_.shutdown_rank(progress);
        std::string who = shutdown_rank == rank_
                              ? "this rank"
                              : "rank " + std::to_string(shutdown_rank);
        if (shutdown_rank != rank_ && intake_.has_ops_in_flight()) {
          // Another rank left early: the ops it leaves behind fail here.
          HVD_LOG(ERROR) << who << " shut down (hvd_shutdown) while rank "
                         << rank_ << " still had ops in flight";
        }
        failure_.fail_everything(
            progress, HVD_ERR_SHUT_DOWN,
            "horovod was shut down (hvd_shutdown on " + who + ")");
        break;
      }
      wait_for_next_cycle(progress);
    }
  } catch (const Error& e) {
    HVD_LOG(ERROR) << e.what();
    failure_.fail_everything(progress, e.status(), e.what());
  } catch (const std::exception& e) {
    HVD_LOG(ERROR) << "background thread: " << e.what();
    failure_.fail_everything(progress, HVD_ERR_INTERNAL,
                             std::string("background thread: ") + e.what());
  }
  progress_closed_ = true;
}

}  // namespace hvd::runtime
