// Dynamic process sets, as the C API asks for them: hvd_add_process_set
// and hvd_remove_process_set are checked here, enqueued as marked barriers
// of the global set and waited for; the cycle applies them at their place
// in the order of responses (cycle_set_changes.cc).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "common/log.h"
#include "runtime/handle.h"
#include "runtime/op_intake.h"
#include "runtime/process_sets.h"
#include "runtime/runtime.h"

namespace hvd::runtime {
namespace {

// How often a set change's wait looks whether the runtime still runs.
constexpr auto kSetChangeSlice = std::chrono::seconds(1);

}  // namespace

int32_t Runtime::wait_for_set_change(hvd_handle_s* handle, const char* call) {
  // The change is negotiated like any op: ranks that never take part in it
  // fail it within stall_check.shutdown_time, a failed or departed rank at
  // once. The wait is sliced so that a runtime which stopped without
  // finishing it (a bug) cannot hold the caller forever.
  std::unique_lock<std::mutex> lock(handle->mutex);
  while (!handle->cv.wait_for(lock, kSetChangeSlice,
                              [&] { return handle->done; })) {
    lock.unlock();
    const bool stopped = intake_->stopped();
    lock.lock();
    if (stopped && !handle->cv.wait_for(lock, kSetChangeSlice,
                                        [&] { return handle->done; })) {
      lock.unlock();
      unref_handle(handle);
      throw Error(HVD_ERR_INTERNAL, std::string(call) +
                                        ": the runtime stopped without "
                                        "finishing the change");
    }
  }
  hvd_status status = handle->status;
  std::string message = handle->message;
  int32_t value = -1;
  if (status == HVD_OK && !handle->outputs.empty()) {
    std::memcpy(&value, handle->outputs[0].view.data, sizeof value);
  }
  lock.unlock();
  unref_handle(handle);
  if (status != HVD_OK) {
    if (message.rfind(call, 0) != 0)
      message = std::string(call) + ": " + message;
    throw Error(status, message);
  }
  return value;
}

int32_t Runtime::add_process_set(const std::vector<int32_t>& ranks) {
  if (!dynamic_sets_) {
    throw Error(HVD_ERR_UNSUPPORTED,
                "hvd_add_process_set: dynamic process sets are off; turn them "
                "on with [runtime] dynamic_process_sets = true "
                "(HOROVOD_DYNAMIC_PROCESS_SETS=1), or pass static sets in "
                "hvd_init_options");
  }
  std::lock_guard<std::mutex> serial(set_change_mutex_);
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
  std::string name = "hvd.process_set.add." + std::to_string(set_changes_++);
  hvd_op op{};
  op.struct_size = sizeof op;
  op.collective = HVD_COLL_BARRIER;
  op.name = name.c_str();
  hvd_handle_s* handle = intake_->enqueue(op, [&](Request& q) {
    q.set_change = SetChange::kAdd;
    q.shapes = {std::vector<int64_t>(ranks.begin(), ranks.end())};
    if (!invalid.empty()) {
      q.failure_status = HVD_ERR_INVALID_ARGUMENT;
      q.failure = invalid;
    }
  });
  return wait_for_set_change(handle, "hvd_add_process_set");
}

void Runtime::remove_process_set(int32_t id) {
  if (!dynamic_sets_) {
    throw Error(HVD_ERR_UNSUPPORTED,
                "hvd_remove_process_set: dynamic process sets are off; turn "
                "them on with [runtime] dynamic_process_sets = true "
                "(HOROVOD_DYNAMIC_PROCESS_SETS=1)");
  }
  std::lock_guard<std::mutex> serial(set_change_mutex_);
  std::string invalid;
  if (id == 0) {
    invalid = "the global process set (0) cannot be removed";
  } else if (!sets_->exists(id)) {
    invalid = "process set " + std::to_string(id) + " does not exist";
  }
  std::string name = "hvd.process_set.remove." + std::to_string(set_changes_++);
  hvd_op op{};
  op.struct_size = sizeof op;
  op.collective = HVD_COLL_BARRIER;
  op.name = name.c_str();
  hvd_handle_s* handle = intake_->enqueue(op, [&](Request& q) {
    q.set_change = SetChange::kRemove;
    q.shapes = {{id}};
    if (!invalid.empty()) {
      q.failure_status = HVD_ERR_INVALID_ARGUMENT;
      q.failure = invalid;
    }
  });
  wait_for_set_change(handle, "hvd_remove_process_set");
}

bool Runtime::process_set_layout(int32_t id, int32_t* rank, int32_t* size) {
  return sets_->layout(id, rank, size);
}

}  // namespace hvd::runtime
