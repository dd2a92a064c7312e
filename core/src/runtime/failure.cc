#include "runtime/failure.h"

#include <poll.h>

#include <vector>

#include "common/error.h"
#include "control/control_plane.h"
#include "p2p/engine.h"
#include "runtime/executor.h"
#include "runtime/flight_recorder.h"
#include "runtime/op_intake.h"
#include "runtime/process_sets.h"
#include "runtime/wakeup.h"

namespace hvd::runtime {

Failure::Failure(int32_t rank, Wakeup& wakeup) : rank_(rank), wakeup_(wakeup) {}

void Failure::attach(const Parts& parts) {
  control_ = &parts.control;
  engine_ = &parts.engine;
  executor_ = &parts.executor;
  sets_ = &parts.sets;
  intake_ = &parts.intake;
  flight_ = parts.flight;
  verdict_wait_ = parts.verdict_wait;
}

void Failure::note(const PeerFailure& failure) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_) return;
    rank_at_fault_ = failure.rank;
    message_ =
        "rank " + std::to_string(failure.rank) + " failed: " + failure.reason;
  }
  failed_ = true;
  wakeup_.wake();  // the background thread fails everything
}

void Failure::note_transport_fault(int32_t peer, const std::string& reason) {
  if (transport_fault_peer_ >= 0) return;
  transport_fault_peer_ = peer;
  transport_fault_ = reason;
}

void Failure::throw_if_failed() const {
  if (!failed_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  throw Error(HVD_ERR_PEER_FAILED, message_, rank_at_fault_);
}

void Failure::data_path_failed(const Error& e) {
  const int32_t peer =
      transport_fault_peer_ >= 0 ? transport_fault_peer_ : e.peer();
  if (peer < 0 || peer == rank_) {
    // This rank's own failure: tell everyone, so none waits for its part.
    if (!failed_) control_->report_failure(rank_, e.what());
    throw e;
  }
  // A broken connection may be a cascade (a survivor closing its
  // connections after another rank died): the control plane knows which
  // rank is at fault, so it has the last word. If it stays silent, what
  // the data path saw is reported.
  await_verdict();
  if (!failed_) {
    control_->report_failure(
        peer, transport_fault_.empty() ? e.what() : transport_fault_);
    await_verdict();
  }
  throw_if_failed();
  throw e;
}

void Failure::await_verdict() {
  auto until = std::chrono::steady_clock::now() + verdict_wait_;
  while (!failed_ && std::chrono::steady_clock::now() < until) {
    pollfd fd{wakeup_.fd(), POLLIN, 0};
    poll(&fd, 1, 5);
    wakeup_.drain();
  }
}

void Failure::fail_everything(const ProgressLock::Held&, hvd_status status,
                              const std::string& message) {
  if (failed_everything_) return;
  record(status, message);
  intake_->stop(status, message);
  if (status != HVD_ERR_SHUT_DOWN) {
    int32_t peer;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      peer = rank_at_fault_;
    }
    engine_->abort(status, peer);
  }
  executor_->fail_all(status, message);
  // The views go first (their ops are the tables'), then every op a set
  // still holds fails through its owner: a callback that throws leaves no
  // view pointing at an op it freed.
  std::vector<PendingOp*> views;
  intake_->take_submitted(views);
  sets_->waiting.clear();
  sets_->cached_waiting.clear();
  for (auto* sets : {&sets_->all(), &sets_->retired()}) {
    for (const auto& set : *sets) {
      set->negotiating.clear();
      set->join = nullptr;
    }
  }
  for (auto* sets : {&sets_->all(), &sets_->retired()}) {
    for (const auto& set : *sets) {
      for (PendingOp* op : set->ops.ops()) {
        intake_->complete(op, status, prefixed(*op, message),
                          transport_fault_peer_);
      }
    }
  }
  // Only once it is through: a call that threw (a callback's error) leaves
  // the rest to the next one.
  failed_everything_ = true;
}

void Failure::record(hvd_status status, const std::string& message) {
  // A clean shutdown dumps only when this rank still had ops in flight (a
  // peer ended early).
  if (!flight_ || (status == HVD_ERR_SHUT_DOWN && !flight_->unfinished())) {
    return;
  }
  // Ops enqueued but not yet taken by a cycle are where this rank is too.
  flight_->tick(std::chrono::steady_clock::now());
  auto record_op = [&](PendingOp* op) {
    const ProcessSet* set = sets_->find(op->request.process_set);
    if (!op->flight_ring && set) flight_->submitted(*op, set->world_ranks);
  };
  for (PendingOp* op : sets_->waiting) record_op(op);
  intake_->visit_submitted(record_op);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    flight_->blame(rank_at_fault_);
  }
  flight_->dump(("failure: " + message).c_str());
}

}  // namespace hvd::runtime
