// The background thread's part in the diagnostics: the timeline's marks of
// negotiation and cycles (the executor marks the data path), and the stall
// inspector on world rank 0.
#include "common/error.h"
#include "common/log.h"
#include "control/control_plane.h"
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

void Runtime::inspect_stalls() {
  StallInspector::Verdict v = stall_->check(std::chrono::steady_clock::now());
  if (!v.warning.empty()) {
    HVD_LOG(WARNING) << v.warning;
  }
  if (v.shutdown.empty()) return;
  // Every rank fails with the message (the control plane logs it), not
  // only this one.
  control_->report_failure(rank_, v.shutdown);
  throw Error(HVD_ERR_ABORTED, v.shutdown);
}

}  // namespace hvd::runtime
