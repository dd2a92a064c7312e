// The cycle's part in the diagnostics: the timeline's marks of negotiation
// and cycles (the executor marks the data path), and the stall inspector
// on world rank 0.
#include "common/error.h"
#include "common/log.h"
#include "runtime/cycle.h"
#include "runtime/flight_recorder.h"
#include "runtime/process_set.h"
#include "runtime/response_cache.h"
#include "runtime/stall_inspector.h"
#include "timeline/phases.h"
#include "timeline/timeline.h"

namespace hvd::runtime {

void Cycle::mark_cycle(const ResponseList& list) {
  // Only cycles that negotiated something: idle ones would bury the rest.
  if (!timeline_.marks_cycles()) return;
  if (requests_.requests.empty() && requests_.cache_hits.empty() &&
      list.responses.empty()) {
    return;
  }
  timeline_.cycle(cycle_start_ns_);
}

void Cycle::mark_negotiated(const ProcessSet& set, const Response& r) {
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

void Cycle::mark_arrivals(const ProcessSet& set, const std::string& name,
                            const std::vector<RequestList>& lists,
                            uint32_t bit) {
  const std::string* row = timeline_.intern(name);
  for (int32_t k = 0; k < set.size(); ++k) {
    const int32_t world = set.world_ranks[k];
    if (test_bit(lists[world].cache_hits, bit)) timeline_.arrived(row, world);
  }
}

void Cycle::mark_arrived(const ProcessSet& set, const std::string& name) {
  const std::string* row = timeline_.intern(name);
  for (int32_t world : set.world_ranks) timeline_.arrived(row, world);
}

void Cycle::note_submitted(const ProcessSet& set, int32_t set_rank,
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

void Cycle::inspect_stalls(ResponseList& out) {
  StallInspector::Verdict v = stall_->check(std::chrono::steady_clock::now());
  out.stall_warning = std::move(v.warning);
  out.stall_failure = std::move(v.shutdown);
}

void Cycle::report_stalls(const ResponseList& list) {
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

}  // namespace hvd::runtime
