// The handle behind hvd_handle*: shared by the caller (until hvd_release)
// and the runtime (until the op ends), so either may let go first.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "horovod/horovod.h"
#include "runtime/tensor_view.h"

namespace hvd::runtime {

// An output whose shape was known only after negotiation (allgather,
// alltoall, join): allocated by the core (memory set) or by the adapter.
struct Output {
  std::unique_ptr<uint8_t, void (*)(void*)> memory{nullptr, nullptr};
  TensorView view;
};

}  // namespace hvd::runtime

struct hvd_handle_s {
  std::atomic<int> refs{2};  // the caller's and the runtime's
  pid_t pid = 0;             // the process that made it (fork awareness)
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::atomic<bool> finished{false};  // `done`, readable without the mutex
  // How long hvd_wait drives the op before it sleeps (runtime.spin_time),
  // spent by the first wait that sleeps: a caller waiting in slices (to see
  // Ctrl-C) would otherwise spin and wake the runtime at every slice.
  std::chrono::nanoseconds spin{0};
  hvd_status status = HVD_OK;
  std::string message;
  std::vector<hvd::runtime::Output> outputs;
  std::vector<int32_t> received_splits;
};

namespace hvd::runtime {

// getpid(), looked up once per process (it is a system call, and every
// handle call checks it); a forked child looks again.
pid_t process_id();

hvd_handle_s* make_handle();
// Marks the handle done and wakes its waiters.
void finish_handle(hvd_handle_s* handle, hvd_status status,
                   const std::string& message);
void unref_handle(hvd_handle_s* handle);

}  // namespace hvd::runtime
