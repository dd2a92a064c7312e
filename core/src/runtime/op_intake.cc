#include "runtime/op_intake.h"

#include <utility>

#include "common/error.h"
#include "common/log.h"
#include "runtime/adapters.h"
#include "runtime/flight_recorder.h"
#include "runtime/handle.h"
#include "runtime/process_sets.h"
#include "runtime/wakeup.h"

namespace hvd::runtime {
namespace {

std::chrono::steady_clock::time_point from_ns(int64_t ns) {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns));
}

}  // namespace

OpIntake::OpIntake(int32_t rank, std::chrono::nanoseconds spin_time,
                   ProcessSets& sets, Wakeup& wakeup, FlightRecorder* flight)
    : rank_(rank),
      spin_time_(spin_time),
      sets_(sets),
      wakeup_(wakeup),
      flight_(flight) {}

hvd_handle_s* OpIntake::enqueue(const hvd_op& op,
                                const std::function<void(Request&)>& adjust) {
  hvd_handle_s* handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) {
      if (stop_status_ == HVD_ERR_SHUT_DOWN && shutdown_rank_ != rank_ &&
          !early_shutdown_logged_) {
        early_shutdown_logged_ = true;
        HVD_LOG(ERROR) << "rank " << shutdown_rank_
                       << " shut down (hvd_shutdown) while rank " << rank_
                       << " still submits ops";
      }
      throw Error(stop_status_, stop_message_);
    }
    std::unique_lock<std::mutex> registry = sets_.lock();
    ProcessSet* set = sets_.find(op.process_set);
    if (!set) {
      throw Error(HVD_ERR_INVALID_ARGUMENT, "hvd_enqueue: process set " +
                                                std::to_string(op.process_set) +
                                                " does not exist");
    }
    if (!set->member()) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_enqueue: rank " + std::to_string(rank_) +
                      " is not a member of process set " +
                      std::to_string(set->id));
    }
    uint64_t& counter = set->unnamed;
    const char* kind = op.collective == HVD_COLL_JOIN ? "join." : "barrier.";
    auto made = std::make_unique<PendingOp>(make_pending_op(
        op, set->size(), set->rank, kind + std::to_string(counter)));
    if (adjust) adjust(made->request);
    // From here the set owns the op; the background thread may finish it
    // as soon as it is queued.
    PendingOp* p = set->ops.insert(std::move(made));
    if (p->adapter) {
      try {
        adapter_acquire(p->adapter);
      } catch (...) {
        set->ops.release(*p);
        throw;
      }
    }
    if ((!op.name || !*op.name) &&
        (op.collective == HVD_COLL_BARRIER || op.collective == HVD_COLL_JOIN)) {
      ++counter;
    }
    p->handle = make_handle();
    p->handle->spin = spin_time_;
    handle = p->handle;
    submitted_.push_back(p);
  }
  const int64_t now =
      std::chrono::steady_clock::now().time_since_epoch().count();
  last_new_ns_.store(now, std::memory_order_relaxed);
  if (!has_new_.exchange(true)) {
    first_new_ns_.store(now, std::memory_order_relaxed);
  }
  wakeup_.wake_if_sleeping();
  return handle;
}

void OpIntake::complete(PendingOp* op, hvd_status status,
                        const std::string& message, int32_t blamed) {
  // Released first, so that a second completion throws before any
  // callback runs again, and a callback may reuse the name.
  std::unique_ptr<PendingOp> owned = op->table->release(*op);
  std::string text = message;
  if (status != HVD_OK && text.empty()) text = op->describe() + " failed";
  if (flight_) {
    flight_->done(*op, status == HVD_OK, status == HVD_OK ? -1 : blamed);
  }
  if (op->adapter) {
    op->adapter->api->done(op->adapter->ctx, op->adapter_op, status,
                           text.c_str());
    adapter_release(op->adapter);
  }
  if (op->done) op->done(op->user, status, text.c_str());
  // Freed before the waiter wakes: where it shares this thread's core, it
  // runs as soon as this thread yields.
  hvd_handle_s* handle = op->handle;
  op->move_to(OpState::kDone);
  owned.reset();
  finish_handle(handle, status, text);
  unref_handle(handle);
}

void OpIntake::take_submitted(std::vector<PendingOp*>& into) {
  into.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  into.swap(submitted_);
}

void OpIntake::visit_submitted(
    const std::function<void(PendingOp*)>& fn) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (PendingOp* op : submitted_) fn(op);
}

void OpIntake::stop(hvd_status status, const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  stop_status_ = status;
  stop_message_ = message;
}

void OpIntake::note_shutdown(int32_t shutdown_rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  shutdown_rank_ = shutdown_rank;
}

void OpIntake::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
}

bool OpIntake::stopped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stopped_;
}

bool OpIntake::has_ops_in_flight() const { return sets_.holds_ops(); }

std::chrono::steady_clock::time_point OpIntake::first_new() const {
  return from_ns(first_new_ns_.load(std::memory_order_relaxed));
}

std::chrono::steady_clock::time_point OpIntake::last_new() const {
  return from_ns(last_new_ns_.load(std::memory_order_relaxed));
}

bool OpIntake::new_since(std::chrono::steady_clock::time_point t) const {
  // has_new_ first: read after the sleeping flag's store, it either sees
  // the latest enqueue's exchange, which published last_new_ns_, or that
  // enqueue sees the flag and writes the wake fd. No take_new() comes
  // between (both are the progress lock's holder's).
  return has_new_.load() &&
         from_ns(last_new_ns_.load(std::memory_order_relaxed)) > t;
}

}  // namespace hvd::runtime
