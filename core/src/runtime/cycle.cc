#include "runtime/cycle.h"

#include <algorithm>

#include "common/error.h"
#include "common/log.h"
#include "config/config.h"
#include "device/device.h"
#include "p2p/and_allreduce.h"
#include "p2p/engine.h"
#include "runtime/autotune.h"
#include "runtime/executor.h"
#include "runtime/failure.h"
#include "runtime/flight_recorder.h"
#include "runtime/fusion.h"
#include "runtime/op_intake.h"
#include "runtime/process_sets.h"
#include "runtime/response_cache.h"
#include "runtime/wakeup.h"
#include "timeline/phases.h"
#include "timeline/timeline.h"

namespace hvd::runtime {
namespace {

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

}  // namespace

Cycle::Cycle(const Config& config, const Parts& parts)
    : rank_(parts.rank),
      control_(parts.control),
      engine_(parts.engine),
      reducers_(parts.reducers),
      executor_(parts.executor),
      sets_(parts.sets),
      intake_(parts.intake),
      failure_(parts.failure),
      wakeup_(parts.wakeup),
      timeline_(parts.timeline),
      stall_(parts.stall),
      flight_(parts.flight),
      fusion_threshold_(config.get_bytes("runtime.fusion_threshold")),
      cycle_time_(config.get_duration("runtime.cycle_time")),
      spin_time_(config.get_duration("runtime.spin_time")) {
  cache_ = std::make_unique<ResponseCache>(static_cast<size_t>(
      std::max<int64_t>(0, config.get_int("runtime.cache_capacity"))));
  cache_sync_ =
      std::make_unique<p2p::AndAllreduce>(engine_, *sets_.world().team);
  stall_check_ = config.get_bool("stall_check.enabled");
  stall_fallback_ = config.get_duration("stall_check.warning_time") / 10;
  start_autotune(config);
}

Cycle::~Cycle() = default;

bool Cycle::run(const Held& progress,
                std::chrono::steady_clock::time_point until) {
  if (round_ == Round::kNone) {
    ++rounds_begun_;
    round_began_ = std::chrono::steady_clock::now();
    gather_requests(progress);
    round_news_ = !requests_.requests.empty() ||
                  !requests_.cache_hits.empty() ||
                  !requests_.cache_stale.empty() || requests_.shutdown;
    summoned_ = false;
    if (start_cache_bits_round(progress)) {
      round_ = Round::kCacheBits;
    } else {
      start_control_round(progress);
    }
  }
  while (true) {
    if (!wait_round(progress, until)) return false;
    if (round_ != Round::kCacheBits) break;
    if (finish_cache_bits_round(progress)) {
      round_ = Round::kNone;
      return true;
    }
    start_control_round(progress);
  }
  finish_control_round(progress);
  return true;
}

bool Cycle::input_ready(PendingOp* op) {
  if (op->adapter && op->adapter->api->ready) {
    hvd_status s = op->adapter->api->ready(op->adapter->ctx, op->adapter_op);
    if (s == HVD_AGAIN) return false;
    if (s != HVD_OK) {
      throw Error(s, op->describe() + ": adapter '" + op->adapter->name +
                         "' reported its inputs failed (" + status_name(s) +
                         ")");
    }
  }
  if (op->ready_event) {
    const hvd_device_api* dev = device_api();
    hvd_status s = dev->event_query(dev->ctx, op->ready_event);
    if (s == HVD_AGAIN) return false;
    if (s != HVD_OK) {
      throw Error(s, op->describe() + ": its ready event failed (" +
                         status_name(s) + ")");
    }
  }
  return true;
}

void Cycle::gather_requests(const Held& progress) {
  last_cycle_ = std::chrono::steady_clock::now();
  if (flight_) flight_->tick(last_cycle_);
  if (timeline_.on()) cycle_start_ns_ = timeline::Timeline::now();
  if (!sets_.retired().empty() && executor_.idle()) sets_.forget_retired();
  intake_.take_submitted(incoming_);
  std::vector<PendingOp*>& waiting = sets_.waiting;
  for (PendingOp* op : incoming_) {
    if (sets_.find(op->request.process_set)) {
      waiting.push_back(op);
    } else {  // removed since it was enqueued
      finish(op, HVD_ERR_ABORTED,
             prefixed(*op, "process set " +
                               std::to_string(op->request.process_set) +
                               " was removed (hvd_remove_process_set)"));
    }
  }
  incoming_.clear();

  requests_.shutdown = shutdown_requested_;
  requests_.requests.clear();
  size_t kept = 0;
  for (PendingOp* op : waiting) {
    bool ready = false;
    try {
      ready = input_ready(op);
    } catch (const Error& e) {
      // Submitted anyway, marked: the op fails on every rank with this
      // message rather than leaving the others waiting for this rank.
      HVD_LOG(ERROR) << e.what();
      op->request.failure_status = e.status();
      op->request.failure = e.what();
      ready = true;
    }
    if (!ready) {
      waiting[kept++] = op;
      continue;
    }
    ProcessSet* set = sets_.find(op->request.process_set);
    if (timeline_.on()) {
      timeline_.begin(timeline_.intern(op->name()),
                      timeline::negotiate_phase(op->collective()));
    }
    if (stall_check_) op->negotiating_since = std::chrono::steady_clock::now();
    if (flight_) flight_->submitted(*op, set->world_ranks);
    op->move_to(OpState::kNegotiating);
    if (op->collective() == HVD_COLL_JOIN) {
      set->join = op;
    } else {
      set->negotiating.emplace(op->name(), op);
    }
    if (cache_->capacity() > 0 && op->request.failure_status == HVD_OK &&
        op->collective() != HVD_COLL_JOIN &&
        op->collective() != HVD_COLL_BARRIER &&
        op->collective() != HVD_COLL_ALLTOALL) {
      op->move_to(OpState::kAwaitingCacheBits);
      sets_.cached_waiting.push_back(op);
      continue;
    }
    requests_.requests.push_back(op->request);
  }
  waiting.resize(kept);
  offer_cached(progress);
}

void Cycle::run_responses(const Held& progress, ResponseList& list) {
  // Idle: nothing negotiated, nothing running (interval()).
  idle_rounds_ =
      list.responses.empty() && executor_.idle() ? idle_rounds_ + 1 : 0;
  apply_cache(progress, list);
  apply_tuning(list);
  if (timeline_.on()) mark_cycle(list);
  for (Response& r : list.responses) {
    if (r.set_change != SetChange::kNone) {
      apply_set_change(progress, r);
      continue;
    }
    ProcessSet* set = sets_.find(r.process_set);
    if (set && r.kind == ResponseKind::kData &&
        response_bytes(r, set->size()) > kQuietBytes) {
      data_path_quiet_ = false;  // on every rank, members or not
    }
    if (!set || !set->member()) continue;
    if (timeline_.on()) mark_negotiated(*set, r);
    // Queued ops wait on no other rank (reasons_to_negotiate).
    if (set->id != 0 || stall_check_) mark_queued(*set, r);
    executor_.push(set, std::move(r));
  }
  if (list.shutdown) {
    shutdown_seen_ = true;
    shutdown_rank_ = list.shutdown_rank;
    intake_.note_shutdown(shutdown_rank_);
  }
}

void Cycle::finish(PendingOp* op, hvd_status status,
                   const std::string& message) {
  intake_.complete(op, status, message, failure_.transport_fault_peer());
}

bool Cycle::drive(const Held&) {
  try {
    return executor_.progress();
  } catch (const Error& e) {
    failure_.data_path_failed(e);
  }
}

void Cycle::drain(const Held& progress) {
  while (!executor_.idle()) {
    bool moved = drive(progress);
    failure_.throw_if_failed();
    if (!moved) {
      engine_.wait(std::chrono::milliseconds(1), wakeup_.fd());
      wakeup_.drain();
    }
  }
}

std::chrono::nanoseconds Cycle::interval(const Held&) const {
  const int doublings = static_cast<int>(
      std::min<uint64_t>(idle_rounds_ / kIdleRoundsPerStep, kIdleDoublingsMax));
  if (doublings == 0) return cycle_time_;
  return std::max<std::chrono::nanoseconds>(
      cycle_time_, std::min<std::chrono::nanoseconds>(
                       cycle_time_ * (1 << doublings), kIdleCycleMax));
}

bool Cycle::slowed(const Held&) const {
  return idle_rounds_ >= kIdleRoundsPerStep;
}

void Cycle::log_summary(const Held&) const {
  if (cache_->capacity() > 0) {
    HVD_LOG(INFO) << cache_->summary();
  }
  HVD_LOG(INFO) << "negotiation: " << control_rounds_
                << " rounds over the control plane, " << cache_bits_rounds_
                << " by cache bits alone";
}

}  // namespace hvd::runtime
