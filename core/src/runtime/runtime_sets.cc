// Dynamic process sets: hvd_add_process_set and hvd_remove_process_set are
// negotiated as marked barriers of the global set, so every rank adds or
// removes the set at the same place in the order of responses, and the
// new set's id (the next unused one: ids are never reused, so no stale
// message of a removed set can match a new one) is the same everywhere.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "bootstrap/bootstrap.h"
#include "common/error.h"
#include "common/log.h"
#include "p2p/engine.h"
#include "runtime/process_set.h"
#include "runtime/response_cache.h"
#include "runtime/runtime.h"
#include "runtime/stall_inspector.h"

namespace hvd::runtime {
namespace {

std::string rank_list(const std::vector<int32_t>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  }
  return "[" + text + "]";
}

}  // namespace

hvd_handle_s* Runtime::start_set_change(SetChange change,
                                        std::vector<int64_t> payload,
                                        const std::string& invalid) {
  // Named under the lock, in the order enqueued: every rank's n-th change
  // has the same name.
  std::lock_guard<std::mutex> serial(set_change_mutex_);
  std::string name = std::string(change == SetChange::kAdd
                                     ? "hvd.process_set.add."
                                     : "hvd.process_set.remove.") +
                     std::to_string(set_changes_++);
  hvd_op op{};
  op.struct_size = sizeof op;
  op.collective = HVD_COLL_BARRIER;
  op.name = name.c_str();
  try {
    return enqueue(op, [&](Request& q) {
      q.set_change = change;
      q.shapes = {std::move(payload)};
      if (!invalid.empty()) {
        q.failure_status = HVD_ERR_INVALID_ARGUMENT;
        q.failure = invalid;
      }
    });
  } catch (const Error& e) {
    // Refused before it began (the runtime stopped, a peer shut down):
    // named like the change's other failures.
    Request q;
    q.set_change = change;
    throw Error(e.status(),
                std::string(call_name(q)) + " '" + name + "': " + e.what(),
                e.peer());
  }
}

hvd_handle_s* Runtime::start_add_process_set(
    const std::vector<int32_t>& ranks) {
  if (!dynamic_sets_) {
    throw Error(HVD_ERR_UNSUPPORTED,
                "hvd_add_process_set: dynamic process sets are off; turn them "
                "on with [runtime] dynamic_process_sets = true "
                "(HOROVOD_DYNAMIC_PROCESS_SETS=1), or pass static sets in "
                "hvd_init_options");
  }
  std::string invalid;
  std::vector<int32_t> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  if (ranks.empty()) invalid = "no ranks given";
  for (size_t i = 0; i < sorted.size() && invalid.empty(); ++i) {
    if (sorted[i] < 0 || sorted[i] >= size_) {
      invalid = "rank " + std::to_string(sorted[i]) + " is not a rank of the " +
                std::to_string(size_) + "-rank world";
    } else if (i > 0 && sorted[i] == sorted[i - 1]) {
      invalid = "rank " + std::to_string(sorted[i]) + " is listed twice";
    }
  }
  if (!invalid.empty())
    invalid = "process set " + rank_list(ranks) + ": " + invalid;
  return start_set_change(SetChange::kAdd,
                          std::vector<int64_t>(ranks.begin(), ranks.end()),
                          invalid);
}

hvd_handle_s* Runtime::start_remove_process_set(int32_t id) {
  if (!dynamic_sets_) {
    throw Error(HVD_ERR_UNSUPPORTED,
                "hvd_remove_process_set: dynamic process sets are off; turn "
                "them on with [runtime] dynamic_process_sets = true "
                "(HOROVOD_DYNAMIC_PROCESS_SETS=1)");
  }
  std::string invalid;
  if (id == 0) {
    invalid = "the global process set (0) cannot be removed";
  } else {
    // A removal of the same set still in flight passes here and fails
    // where the change is applied.
    std::lock_guard<std::mutex> lock(mutex_);
    if (!find_set(id)) {
      invalid = "process set " + std::to_string(id) + " does not exist";
    }
  }
  return start_set_change(SetChange::kRemove, {id}, invalid);
}

bool Runtime::process_set_layout(int32_t id, int32_t* rank, int32_t* size) {
  std::lock_guard<std::mutex> lock(mutex_);
  const ProcessSet* set = find_set(id);
  if (!set) return false;
  *rank = set->rank;
  *size = set->size();
  return true;
}

void Runtime::apply_set_change(const Held&, const Response& r) {
  ProcessSet* global = find_set(0);
  PendingOp* op = nullptr;
  auto it = global->negotiating.find(r.entries[0].name);
  if (it != global->negotiating.end()) {
    op = it->second;
    global->negotiating.erase(it);
  }
  const std::vector<int64_t> payload = r.entries[0].shapes.empty()
                                           ? std::vector<int64_t>{}
                                           : r.entries[0].shapes[0];
  int32_t id = -1;
  hvd_status status = HVD_OK;
  std::string error;
  if (r.set_change == SetChange::kAdd) {
    std::vector<int32_t> ranks(payload.begin(), payload.end());
    id = next_set_id_++;
    auto set = std::make_unique<ProcessSet>(id, ranks, rank_,
                                            bootstrap_->layout().host_of,
                                            engine_->epoch(), rank_ == 0);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sets_.push_back(std::move(set));
    }
    HVD_LOG(INFO) << "process set " << id << " added: ranks "
                  << rank_list(ranks);
  } else {
    id = payload.empty() ? -1 : static_cast<int32_t>(payload[0]);
    size_t index = 0;
    while (index < sets_.size() && sets_[index]->id != id) ++index;
    if (id == 0 || index == sets_.size()) {
      status = HVD_ERR_INVALID_ARGUMENT;
      error = "hvd_remove_process_set: process set " + std::to_string(id) +
              " does not exist";
    } else {
      ProcessSet* set = sets_[index].get();
      fail_set_ops(set, "process set " + std::to_string(id) +
                            " was removed (hvd_remove_process_set) while this "
                            "op was in flight");
      cache_->erase_process_set(id);
      if (stall_) stall_->forget(id);
      std::lock_guard<std::mutex> lock(mutex_);
      retired_sets_.push_back(std::move(sets_[index]));
      sets_.erase(sets_.begin() + static_cast<std::ptrdiff_t>(index));
    }
    if (status == HVD_OK) {
      HVD_LOG(INFO) << "process set " << id << " removed";
    }
  }
  if (!op) return;
  if (status == HVD_OK) {
    Output out;
    out.memory = {static_cast<uint8_t*>(malloc(sizeof(int32_t))), free};
    if (!out.memory) throw Error(HVD_ERR_OUT_OF_MEMORY, "process set id");
    std::memcpy(out.memory.get(), &id, sizeof id);
    out.view.data = out.memory.get();
    out.view.dtype = HVD_INT32;
    out.view.shape = {1};
    out.view.elements = 1;
    out.view.bytes = sizeof(int32_t);
    op->handle->outputs.push_back(std::move(out));
  }
  complete(op, status, error);
}

bool Runtime::awaiting_others() const {
  for (const auto& set : sets_) {
    if (!set->negotiating.empty() || set->join) return true;
  }
  return false;
}

void Runtime::mark_queued(ProcessSet& set, const Response& response) {
  for (const Entry& e : response.entries) {
    auto it = set.negotiating.find(e.name);
    if (it != set.negotiating.end()) it->second->state = OpState::kQueued;
  }
}

void Runtime::fail_set_ops(ProcessSet* set, const std::string& message) {
  // What negotiation has not run yet; responses already negotiated run on.
  auto fail = [&](PendingOp* op) {
    complete(op, HVD_ERR_ABORTED, prefixed(*op, message));
  };
  auto in_set = [&](PendingOp* op) {
    return op->request.process_set == set->id;
  };
  std::vector<PendingOp*> doomed;
  for (auto it = set->negotiating.begin(); it != set->negotiating.end();) {
    if (it->second->state == OpState::kQueued) {
      ++it;
      continue;
    }
    doomed.push_back(it->second);
    it = set->negotiating.erase(it);
  }
  if (set->join) doomed.push_back(set->join);
  set->join = nullptr;
  for (auto* list : {&waiting_, &cached_waiting_}) {
    for (PendingOp* op : *list) {
      if (in_set(op) && list == &waiting_) doomed.push_back(op);
    }
    list->erase(std::remove_if(list->begin(), list->end(), in_set),
                list->end());
  }
  for (PendingOp* op : doomed) fail(op);
}

}  // namespace hvd::runtime
