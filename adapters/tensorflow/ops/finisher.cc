#include "finisher.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "op_state.h"
#include "status_codes.h"

namespace hvd::tf {
namespace {

// Writes the op's second TF output (alltoall) or its only one (join) from
// the completed handle.
TF_Code write_results(OpState* state, std::string* error) {
  hvd_handle* handle = state->handle;
  std::vector<int64_t> shape;
  std::vector<int32_t> values;
  int output = 0;
  if (state->config().collective == HVD_COLL_ALLTOALL) {
    const int32_t* splits = nullptr;
    int32_t count = 0;
    if (hvd_handle_received_splits(handle, &splits, &count) != HVD_OK) {
      *error = hvd_last_error();
      return TF_INTERNAL;
    }
    values.assign(splits, splits + count);
    shape = {count};
    output = 1;
  } else {
    hvd_tensor last{};
    last.struct_size = sizeof last;
    if (hvd_handle_output(handle, 0, &last) != HVD_OK) {
      *error = hvd_last_error();
      return TF_INTERNAL;
    }
    int32_t rank = 0;
    std::memcpy(&rank, last.data, sizeof rank);
    values = {rank};  // a scalar, as Horovod's join returns
  }
  hvd_tensor out;
  if (state->allocate_output(output, shape, &out) != HVD_OK) {
    *error = "cannot allocate output " + std::to_string(output) + ": " +
             state->message;
    return TF_RESOURCE_EXHAUSTED;
  }
  if (!values.empty())
    std::memcpy(out.data, values.data(), values.size() * sizeof(int32_t));
  return TF_OK;
}

}  // namespace

bool ends_through_handle(hvd_collective collective) {
  return collective == HVD_COLL_ALLTOALL || collective == HVD_COLL_JOIN;
}

Finisher& Finisher::get() {
  static Finisher* finisher = new Finisher;  // outlives static destruction
  return *finisher;
}

Finisher::Finisher() {
  std::thread([this] { loop(); }).detach();
}

void Finisher::handed_over(OpState* state, hvd_handle* handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  state->handle = handle;
  wake_.notify_one();
}

void Finisher::ended(OpState* state) {
  std::lock_guard<std::mutex> lock(mutex_);
  ended_.push_back(state);
  wake_.notify_one();
}

void Finisher::loop() {
  for (;;) {
    OpState* state = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      auto with_handle = [&] {
        return std::find_if(ended_.begin(), ended_.end(),
                            [](OpState* s) { return s->handle != nullptr; });
      };
      wake_.wait(lock, [&] { return with_handle() != ended_.end(); });
      auto it = with_handle();
      state = *it;
      ended_.erase(it);
    }
    // Returns at once: the core marks the handle done right after done().
    hvd_wait(state->handle, -1);
    std::string error;
    TF_Code code = tf_code(state->status);
    std::string message = state->message;
    if (code == TF_OK) {
      code = write_results(state, &error);
      message = state->config().name + ": " + error;
    }
    hvd_release(state->handle);
    if (code == TF_OK)
      state->finish(TF_OK, "");
    else
      state->finish(code, message);
  }
}

}  // namespace hvd::tf
