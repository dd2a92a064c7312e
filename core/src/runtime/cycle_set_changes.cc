// Process set changes as the cycle applies them: hvd_add_process_set and
// hvd_remove_process_set are negotiated as marked barriers of the global
// set, so every rank adds or removes the set at the same place in the
// order of responses, and the new set's id is the same everywhere.
#include <algorithm>

#include "common/error.h"
#include "common/log.h"
#include "runtime/cycle.h"
#include "runtime/handle.h"
#include "runtime/process_sets.h"
#include "runtime/response_cache.h"
#include "runtime/stall_inspector.h"

namespace hvd::runtime {

void Cycle::apply_set_change(const Held&, const Response& r) {
  ProcessSet& global = sets_.world();
  PendingOp* op = nullptr;
  auto it = global.negotiating.find(r.entries[0].name);
  if (it != global.negotiating.end()) {
    op = it->second;
    global.negotiating.erase(it);
  }
  const std::vector<int64_t> payload = r.entries[0].shapes.empty()
                                           ? std::vector<int64_t>{}
                                           : r.entries[0].shapes[0];
  int32_t id = -1;
  hvd_status status = HVD_OK;
  std::string error;
  if (r.set_change == SetChange::kAdd) {
    std::vector<int32_t> ranks(payload.begin(), payload.end());
    id = sets_.add(ranks);
    HVD_LOG(INFO) << "process set " << id << " added: ranks "
                  << describe_ranks(ranks);
  } else {
    id = payload.empty() ? -1 : static_cast<int32_t>(payload[0]);
    ProcessSet* set = id == 0 ? nullptr : sets_.find(id);
    if (!set) {
      status = HVD_ERR_INVALID_ARGUMENT;
      error = "hvd_remove_process_set: process set " + std::to_string(id) +
              " does not exist";
    } else {
      fail_set_ops(set, "process set " + std::to_string(id) +
                            " was removed (hvd_remove_process_set) while this "
                            "op was in flight");
      cache_->erase_process_set(id);
      if (stall_) stall_->forget(id);
      sets_.retire(id);
      HVD_LOG(INFO) << "process set " << id << " removed";
    }
  }
  if (!op) return;
  if (status == HVD_OK) {
    op->handle->outputs.push_back(int32_output(id, "process set id"));
  }
  finish(op, status, error);
}

void Cycle::mark_queued(ProcessSet& set, const Response& response) {
  for (const Entry& e : response.entries) {
    auto it = set.negotiating.find(e.name);
    if (it != set.negotiating.end()) it->second->move_to(OpState::kQueued);
  }
}

void Cycle::fail_set_ops(ProcessSet* set, const std::string& message) {
  // What negotiation has not run yet; responses already negotiated run on.
  auto in_set = [&](PendingOp* op) {
    return op->request.process_set == set->id;
  };
  std::vector<PendingOp*> doomed;
  for (auto it = set->negotiating.begin(); it != set->negotiating.end();) {
    if (it->second->state() == OpState::kQueued) {
      ++it;
      continue;
    }
    doomed.push_back(it->second);
    it = set->negotiating.erase(it);
  }
  if (set->join) doomed.push_back(set->join);
  set->join = nullptr;
  for (auto* list : {&sets_.waiting, &sets_.cached_waiting}) {
    for (PendingOp* op : *list) {
      if (in_set(op) && list == &sets_.waiting) doomed.push_back(op);
    }
    list->erase(std::remove_if(list->begin(), list->end(), in_set),
                list->end());
  }
  for (PendingOp* op : doomed) {
    finish(op, HVD_ERR_ABORTED, prefixed(*op, message));
  }
}

}  // namespace hvd::runtime
