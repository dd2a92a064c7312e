#include "task.h"

#include "horovod_plugin/boundary.h"

using hvd_plugin::fail;
using hvd_plugin::set_last_error;

void* hvd_task_s::lease(size_t bytes) {
  void* p = core->pool().acquire(bytes);
  if (p == nullptr) {
    fail(HVD_ERR_OUT_OF_MEMORY, name + ": cannot allocate " +
                                    std::to_string(bytes) +
                                    " bytes of scratch");
  }
  scratch.push_back(p);
  return p;
}

namespace hvd::reducers {

ReducerCore::~ReducerCore() = default;

hvd_task_s* ReducerCore::begin_task(const char* name, const Collective& c,
                                    const hvd_p2p_api* api, hvd_p2p* p2p) {
  std::unique_ptr<hvd_task_s> task;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      task = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!task) task = std::make_unique<hvd_task_s>();
  task->core = this;
  task->name = name;
  ScheduleContext ctx;
  ctx.p2p_api = api;
  ctx.p2p = p2p;
  ctx.team = c.team;
  ctx.device = host_->device;
  ctx.memory = c.device;
  ctx.dtype = c.dtype;
  ctx.op = c.op;
  ctx.element_size = c.esize;
  task->schedule.reset(ctx);
  for (auto& v : task->ops) v.clear();
  task->offsets.clear();
  task->lengths.clear();
  return task.release();
}

void ReducerCore::end_task(hvd_task_s* task) {
  std::unique_ptr<hvd_task_s> owned(task);
  const bool quiet = task->schedule.in_flight() == 0 || task->schedule.drain();
  for (void* p : task->scratch) {
    if (quiet) {
      pool_.release(p);
    } else {
      pool_.abandon(p);  // a receive may still land in it
    }
  }
  task->scratch.clear();
  if (!quiet) {
    // Its schedule still names requests the p2p layer owns: do not reuse.
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(std::move(owned));
}

hvd_status task_progress(hvd_task* task, hvd_completion* out) {
  if (task == nullptr) {
    set_last_error("progress: task is NULL");
    return HVD_ERR_INVALID_ARGUMENT;
  }
  const hvd_status status = task->schedule.progress(out);
  if (status != HVD_OK && status != HVD_AGAIN) {
    set_last_error(task->name + ": " + task->schedule.message());
  }
  return status;
}

hvd_status task_free(hvd_task* task) {
  if (task != nullptr) task->core->end_task(task);
  return HVD_OK;
}

hvd_status task_abort(hvd_task* task, hvd_status reason, int32_t peer) {
  if (task == nullptr) return HVD_ERR_INVALID_ARGUMENT;
  task->schedule.abort(reason, peer);
  return HVD_OK;
}

void check_host(const hvd_host* host, const char* reducer) {
  if (host == nullptr ||
      host->struct_size < HVD_STRUCT_SIZE(hvd_host, device) ||
      host->mem_alloc == nullptr || host->mem_free == nullptr ||
      host->config_error == nullptr || host->device == nullptr) {
    fail(HVD_ERR_VERSION, std::string(reducer) +
                              ": the host table lacks memory, configuration "
                              "or device services");
  }
  const hvd_device_api* d = host->device;
  if (d->struct_size < HVD_STRUCT_SIZE(hvd_device_api, scale) ||
      d->reduce == nullptr || d->scale == nullptr ||
      d->memcpy_async == nullptr) {
    fail(HVD_ERR_VERSION,
         std::string(reducer) + ": the device layer lacks reduce/scale/copy");
  }
}

}  // namespace hvd::reducers
