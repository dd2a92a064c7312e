// Dynamic process sets, as the C API asks for them: hvd_add_process_set
// and hvd_remove_process_set are checked here and enqueued as marked
// barriers of the global set, whose handles finish with the set's id; the
// cycle applies them at their place in the order of responses
// (cycle_set_changes.cc).
#include <algorithm>
#include <string>
#include <utility>

#include "common/error.h"
#include "runtime/op_intake.h"
#include "runtime/process_sets.h"
#include "runtime/runtime.h"

namespace hvd::runtime {

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
    return intake_->enqueue(op, [&](Request& q) {
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
    invalid = "process set " + describe_ranks(ranks) + ": " + invalid;
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
  } else if (!sets_->exists(id)) {
    // A removal of the same set still in flight passes here and fails
    // where the change is applied.
    invalid = "process set " + std::to_string(id) + " does not exist";
  }
  return start_set_change(SetChange::kRemove, {id}, invalid);
}

bool Runtime::process_set_layout(int32_t id, int32_t* rank, int32_t* size) {
  return sets_->layout(id, rank, size);
}

}  // namespace hvd::runtime
