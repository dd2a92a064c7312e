#include "runtime/driver.h"

#include <sched.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "common/error.h"
#include "runtime/adapters.h"
#include "runtime/cycle.h"
#include "runtime/executor.h"
#include "runtime/failure.h"
#include "runtime/handle.h"
#include "runtime/op_intake.h"
#include "runtime/process_sets.h"
#include "runtime/wakeup.h"

namespace hvd::runtime {
namespace {

// The driver this thread drives in the background thread's place (its
// completion callbacks run here), else null.
thread_local const Driver* t_driving = nullptr;

}  // namespace

Driver::Driver(const Parts& parts)
    : rank_(parts.rank),
      cycle_(parts.cycle),
      failure_(parts.failure),
      intake_(parts.intake),
      sets_(parts.sets),
      executor_(parts.executor),
      control_(parts.control),
      engine_(parts.engine),
      wakeup_(parts.wakeup),
      spin_time_(parts.spin_time),
      callers_may_drive_(parts.callers_may_drive) {}

Driver::~Driver() { stop(); }

void Driver::start() {
  thread_ = std::thread([this] { loop(); });
}

void Driver::stop() {
  if (!thread_.joinable()) return;
  cycle_.request_shutdown();
  wakeup_.wake();
  thread_.join();
}

bool Driver::on_progress_thread() const {
  return t_driving == this || std::this_thread::get_id() == thread_.get_id();
}

void Driver::rethrow_caller_error(const Held&) {
  if (caller_error_) std::rethrow_exception(std::exchange(caller_error_, {}));
}

bool Driver::drive_until_done(hvd_handle_s* handle,
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
        left_work = !executor_.idle() || sets_.awaiting_others() ||
                    !sets_.waiting.empty() || intake_.has_new() ||
                    cycle_.round_open(*progress);
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
  if (left_work) wakeup_.wake();
  return handle->finished.load(std::memory_order_acquire);
}

bool Driver::caller_step(const Held& progress,
                         std::chrono::steady_clock::time_point until) {
  bool moved = cycle_.drive(progress);
  failure_.throw_if_failed();
  // The end of the job is the background thread's to negotiate and carry
  // out.
  if (cycle_.shutdown_requested() || cycle_.shutdown_seen(progress)) {
    return moved;
  }
  // The ops that wait for other ranks, or new ones, need the next round;
  // a busy data path is driven first (the background thread fuses what
  // comes meanwhile; this thread has nothing more to add).
  if (cycle_.round_open(progress)) return cycle_.run(progress, until) || moved;
  if (executor_.idle() && (intake_.take_new() || sets_.awaiting_others())) {
    cycle_.run(progress, until);
    moved = true;
  }
  return moved;
}

}  // namespace hvd::runtime
