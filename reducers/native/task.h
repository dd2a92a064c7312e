// One collective run by the team's transport itself (its collectives
// extension, reached through hvd_p2p_api.native): prescale, post, drive
// the request with native_test() until it completes, postscale.
#pragma once

#include <atomic>
#include <cstdint>

#include "horovod/reducer.h"
#include "horovod_plugin/pool.h"

namespace hvd::reducers::native {
class TaskPool;
}

struct hvd_task_s {
  hvd::reducers::native::TaskPool* pool = nullptr;  // where it returns
  const hvd_host* host = nullptr;
  const hvd_p2p_api* api = nullptr;
  hvd_p2p* p2p = nullptr;
  const hvd_coll_args* args = nullptr;
  const hvd_transport_collectives* native = nullptr;
  hvd_coll_comm* comm = nullptr;
  hvd_reduce_op op = HVD_OP_SUM;   // what the transport reduces with
  hvd_request* request = nullptr;  // null once it completed
  void* scratch = nullptr;         // prescaled send of a reducescatter
  size_t result_count = 0;         // elements postscaled in recv
  std::atomic<bool> abort_claimed{false};
  std::atomic<hvd_status> abort_reason{HVD_OK};
  std::atomic<int32_t> abort_peer{-1};
};

namespace hvd::reducers::native {

// Finished tasks, kept for the next post so a stream of collectives
// allocates nothing. The core's thread alone posts and frees tasks.
class TaskPool {
 public:
  hvd_task_s* take() {
    hvd_task_s* task = tasks_.take();
    task->pool = this;
    return task;
  }
  void give(hvd_task_s* task) { tasks_.put(task); }

 private:
  hvd_plugin::Pool<hvd_task_s> tasks_;
};

// Posts the collective into *out. Answers HVD_ERR_UNSUPPORTED, with the
// reason as the thread's last error and before anything was written, when
// the team's transport has no native collective for it: on teams served by
// tcp that is every post, so declining must cost no exception. Throws a
// Failure for real errors.
hvd_status start_task(const hvd_host* host, TaskPool& pool,
                      const hvd_coll_args* args, const hvd_p2p_api* api,
                      hvd_p2p* p2p, hvd_task** out);
hvd_status progress_task(hvd_task* task, hvd_completion* out);
void free_task(hvd_task* task);

}  // namespace hvd::reducers::native
