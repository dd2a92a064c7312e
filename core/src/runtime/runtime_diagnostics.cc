// The background thread's part in the diagnostics: the timeline's marks of
// negotiation and cycles (the executor marks the data path), and the stall
// inspector on world rank 0.
#include "common/error.h"
#include "common/log.h"
#include "control/control_plane.h"
#include "runtime/flight_recorder.h"
#include "runtime/process_set.h"
#include "runtime/response_cache.h"
#include "runtime/runtime.h"
#include "runtime/stall_inspector.h"
#include "timeline/phases.h"
#include "timeline/plugin_hooks.h"

namespace hvd::runtime {

void Runtime::start_diagnostics() {
  timeline_hooks_ = std::make_unique<timeline::PluginHooks>(timeline_);
  // "DYNAMIC": no trace until hvd_start_timeline (which works either way).
  const std::string path = config_.get_string("timeline.path");
  if (rank_ == 0 && !path.empty() && path != "DYNAMIC") {
    try {
      timeline_.start(path, config_.get_bool("timeline.mark_cycles"), rank_);
    } catch (const Error& e) {
      throw Error(e.status(),
                  config_.source("timeline.path") + ": " + e.what());
    }
  }
  if (config_.get_bool("flight_recorder.enabled")) {
    const int64_t entries = config_.get_int("flight_recorder.entries");
    if (entries < 1 || entries > FlightRecorder::kMaxEntries) {
      throw Error(HVD_ERR_INVALID_ARGUMENT,
                  config_.source("flight_recorder.entries") +
                      ": flight_recorder.entries must be 1 to " +
                      std::to_string(FlightRecorder::kMaxEntries) + ", not " +
                      std::to_string(entries) +
                      " (flight_recorder.enabled = false turns it off)");
    }
    FlightRecorder::Options options;
    options.entries = static_cast<size_t>(entries);
    options.dir = FlightRecorder::log_dir(config_.get_string("log.dir"));
    options.rank = rank_;
    options.size = size_;
    flight_ = std::make_unique<FlightRecorder>(options);
  }
  if (rank_ == 0 && config_.get_bool("stall_check.enabled")) {
    stall_ = std::make_unique<StallInspector>(
        config_.get_duration("stall_check.warning_time"),
        config_.get_duration("stall_check.shutdown_time"));
  }
}

void Runtime::start_timeline(const std::string& path, bool mark_cycles) {
  if (path.empty()) {
    throw Error(HVD_ERR_INVALID_ARGUMENT, "hvd_start_timeline: empty path");
  }
  if (rank_ == 0) timeline_.start(path, mark_cycles, rank_);
}

void Runtime::stop_timeline() { timeline_.stop(); }

void Runtime::mark_cycle(const ResponseList& list) {
  // Only cycles that negotiated something: idle ones would bury the rest.
  if (!timeline_.marks_cycles()) return;
  if (requests_.requests.empty() && requests_.cache_hits.empty() &&
      list.responses.empty()) {
    return;
  }
  timeline_.cycle(cycle_start_ns_);
}

void Runtime::mark_negotiated(const ProcessSet& set, const Response& r) {
  for (const Entry& e : r.entries) {
    if (!set.negotiating.count(e.name)) continue;  // not submitted here
    const std::string* row = timeline_.intern(e.name);
    timeline_.negotiated(row);
    if (r.kind == ResponseKind::kData) {
      timeline_.begin(row, timeline::op_phase(r.collective));
      timeline_.begin(row, timeline::kQueue);
    }
  }
}

void Runtime::mark_arrivals(const ProcessSet& set, const std::string& name,
                            const std::vector<RequestList>& lists,
                            uint32_t bit) {
  const std::string* row = timeline_.intern(name);
  for (int32_t k = 0; k < set.size(); ++k) {
    const int32_t world = set.world_ranks[k];
    if (test_bit(lists[world].cache_hits, bit)) timeline_.arrived(row, world);
  }
}

void Runtime::mark_arrived(const ProcessSet& set, const std::string& name) {
  const std::string* row = timeline_.intern(name);
  for (int32_t world : set.world_ranks) timeline_.arrived(row, world);
}

void Runtime::note_submitted(const ProcessSet& set, int32_t set_rank,
                             const Request& q) {
  const auto now = std::chrono::steady_clock::now();
  if (q.collective == HVD_COLL_JOIN) {
    stall_->joined(set.id, set.world_ranks, set_rank, now);
    return;
  }
  std::string call = call_name(q);
  if (q.set_change != SetChange::kNone) {
    call += "(";
    const std::vector<int64_t> payload =
        q.shapes.empty() ? std::vector<int64_t>{} : q.shapes[0];
    for (size_t i = 0; i < payload.size(); ++i) {
      call += (i ? ", " : "") + std::to_string(payload[i]);
    }
    call += ")";
  }
  stall_->submitted(set.id, set.world_ranks, q.name, set_rank, now, call);
}

void Runtime::inspect_stalls(ResponseList& out) {
  StallInspector::Verdict v = stall_->check(std::chrono::steady_clock::now());
  out.stall_warning = std::move(v.warning);
  out.stall_failure = std::move(v.shutdown);
}

void Runtime::report_stalls(const ResponseList& list) {
  if (!list.stall_warning.empty()) {
    HVD_LOG(WARNING) << list.stall_warning;
    if (flight_) flight_->dump("stall warning");
  }
  // Every rank fails with the message (the loop logs it), its pending ops
  // each naming themselves before it.
  if (!list.stall_failure.empty()) {
    throw Error(HVD_ERR_ABORTED, list.stall_failure);
  }
}

void Runtime::record_failure(hvd_status status, const std::string& message) {
  // A clean shutdown dumps only when this rank still had ops in flight (a
  // peer ended early).
  if (!flight_ || (status == HVD_ERR_SHUT_DOWN && !flight_->unfinished())) {
    return;
  }
  // Ops enqueued but not yet taken by a cycle are where this rank is too.
  flight_->tick(std::chrono::steady_clock::now());
  auto record = [&](PendingOp* op) {
    const ProcessSet* set = find_set(op->request.process_set);
    if (!op->flight_ring && set) flight_->submitted(*op, set->world_ranks);
  };
  for (PendingOp* op : waiting_) record(op);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (PendingOp* op : submitted_) record(op);
  }
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    flight_->blame(failure_rank_);
  }
  flight_->dump(("failure: " + message).c_str());
}

}  // namespace hvd::runtime
