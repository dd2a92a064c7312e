// One collective in flight (hvd_task) and what every built-in reducer
// shares: the scratch pool, a cache of idle tasks (their schedules keep
// their capacity, so a warm reducer allocates nothing per task), and the
// task functions of the ABI table.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collective.h"
#include "horovod/reducer.h"
#include "schedule.h"
#include "scratch_pool.h"
#include "window.h"

namespace hvd::reducers {
class ReducerCore;
}

struct hvd_task_s {
  hvd::reducers::ReducerCore* core = nullptr;
  std::string name;  // "ring allreduce", for messages
  hvd::reducers::Schedule schedule;
  hvd::reducers::Window window;       // receives in flight
  hvd::reducers::Window send_window;  // sends that depend on nothing else
  // Bookkeeping the builders keep per chunk or per step, reused.
  std::vector<hvd::reducers::Schedule::Op> ops[4];
  std::vector<size_t> offsets, lengths;
  std::vector<void*> scratch;  // leased from the pool

  // Scratch of at least `bytes` for this task; throws when out of memory.
  void* lease(size_t bytes);
};

namespace hvd::reducers {

class ReducerCore {
 public:
  explicit ReducerCore(const hvd_host* host) : host_(host), pool_(host) {}
  ~ReducerCore();
  const hvd_host* host() const { return host_; }
  ScratchPool& pool() { return pool_; }

  // A task ready to be built: its schedule reset for `c` on `p2p`.
  hvd_task_s* begin_task(const char* name, const Collective& c,
                         const hvd_p2p_api* api, hvd_p2p* p2p);
  // Back to the cache; its scratch back to the pool (or abandoned when a
  // transfer that might still write it never finished).
  void end_task(hvd_task_s* task);

 private:
  const hvd_host* host_;
  ScratchPool pool_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<hvd_task_s>> idle_;
};

// Returns a task to its core unless released (for post()'s failure paths).
class TaskGuard {
 public:
  explicit TaskGuard(hvd_task_s* task) : task_(task) {}
  ~TaskGuard() {
    if (task_ != nullptr) task_->core->end_task(task_);
  }
  TaskGuard(const TaskGuard&) = delete;
  TaskGuard& operator=(const TaskGuard&) = delete;
  hvd_task_s* operator->() const { return task_; }
  hvd_task_s& operator*() const { return *task_; }
  hvd_task_s* release() {
    hvd_task_s* t = task_;
    task_ = nullptr;
    return t;
  }

 private:
  hvd_task_s* task_;
};

// The task functions of a reducer table.
hvd_status task_progress(hvd_task* task, hvd_completion* out);
hvd_status task_free(hvd_task* task);
hvd_status task_abort(hvd_task* task, hvd_status reason, int32_t peer);

// Checks the host table an init() receives; throws Failure.
void check_host(const hvd_host* host, const char* reducer);

}  // namespace hvd::reducers
