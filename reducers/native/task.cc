#include "task.h"

#include <cstring>
#include <string>

#include "horovod_plugin/boundary.h"
#include "horovod_plugin/enums.h"

namespace hvd::reducers::native {
namespace {

using hvd_plugin::fail;

void check(hvd_status s, const char* what) {
  if (s != HVD_OK) fail(s, std::string("native: ") + what + " failed");
}

// The blocks of a reducescatter must lie in rank order, back to back: the
// extension takes no displacements.
bool contiguous(const hvd_coll_args& a, int32_t size) {
  if (a.displs == nullptr) return true;
  size_t at = 0;
  for (int32_t r = 0; r < size; ++r) {
    if (a.displs[r] != at) return false;
    at += a.counts[r];
  }
  return true;
}

// Gives the task back to its pool unless released (a post that failed).
struct Claim {
  hvd_task_s* task;
  ~Claim() {
    if (task) task->pool->give(task);
  }
  hvd_task_s* operator->() const { return task; }
  hvd_task_s* release() {
    hvd_task_s* t = task;
    task = nullptr;
    return t;
  }
};

hvd_status decline(const std::string& why) {
  hvd_plugin::set_last_error(why);
  return HVD_ERR_UNSUPPORTED;
}

}  // namespace

hvd_status start_task(const hvd_host* host, TaskPool& pool,
                      const hvd_coll_args* args, const hvd_p2p_api* api,
                      hvd_p2p* p2p, hvd_task** out) {
  if (args == nullptr || api == nullptr || p2p == nullptr) {
    fail(HVD_ERR_INVALID_ARGUMENT, "native post: NULL argument");
  }
  if (!HVD_HAS_FIELD(api, hvd_p2p_api, native_test) || !api->native ||
      !api->native_test) {
    return decline("native: this core offers no native collectives");
  }
  const hvd_coll_args& a = *args;
  const hvd_team* team = api->team(p2p);
  // Declining takes no task: on teams served by tcp every post declines.
  hvd_coll_comm* comm = nullptr;
  const hvd_transport_collectives* native = api->native(p2p, &comm);
  if (native == nullptr) {
    return decline(
        "native: no transport with native collectives serves this team of " +
        std::to_string(team->size) + " rank(s)");
  }
  const bool reducing = a.collective == HVD_COLL_ALLREDUCE ||
                        a.collective == HVD_COLL_REDUCESCATTER;
  const hvd_reduce_op op = a.op == HVD_OP_AVERAGE ? HVD_OP_SUM : a.op;
  if (!native->supports(comm, a.collective, a.dtype,
                        reducing ? op : HVD_OP_SUM, a.device.kind)) {
    return decline(std::string("native: the transport has no native ") +
                   hvd_plugin::collective_name(a.collective) + " of " +
                   hvd_plugin::dtype_name(a.dtype) + ", op " +
                   hvd_plugin::op_name(a.op) + ", memory kind " +
                   std::to_string(a.device.kind));
  }
  Claim task{pool.take()};
  task->host = host;
  task->api = api;
  task->p2p = p2p;
  task->args = args;
  task->native = native;
  task->comm = comm;
  task->op = op;
  const size_t esize = hvd_plugin::dtype_size(a.dtype);
  const hvd_device_api* dev = host->device;
  const hvd_transport_collectives& n = *task->native;
  const void* send = a.send;
  hvd_status s = HVD_ERR_UNSUPPORTED;
  hvd_request** req = &task->request;
  switch (a.collective) {
    case HVD_COLL_ALLREDUCE:
      if (a.prescale != 1.0) {
        if (a.send != a.recv) {
          check(dev->memcpy_async(dev->ctx, a.recv, a.device, a.send, a.device,
                                  a.count * esize, a.stream),
                "copy before prescale");
        }
        check(dev->scale(dev->ctx, a.device, a.dtype, a.recv, a.count,
                         a.prescale, a.stream),
              "prescale");
        send = a.recv;
      }
      task->result_count = a.count;
      s = n.allreduce(task->comm, send, a.recv, a.count, a.dtype, task->op,
                      a.stream, req);
      if (s == HVD_ERR_UNSUPPORTED && send == a.recv && a.prescale != 1.0 &&
          a.send == a.recv) {
        // The input is already scaled: falling through would scale twice.
        s = HVD_ERR_INTERNAL;
      }
      break;
    case HVD_COLL_REDUCESCATTER:
      if (!contiguous(a, team->size) || a.send == a.recv) break;
      if (a.prescale != 1.0) {
        check(
            dev->mem_alloc(dev->ctx, a.device, a.count * esize, &task->scratch),
            "scratch allocation");
        check(dev->memcpy_async(dev->ctx, task->scratch, a.device, a.send,
                                a.device, a.count * esize, a.stream),
              "copy before prescale");
        check(dev->scale(dev->ctx, a.device, a.dtype, task->scratch, a.count,
                         a.prescale, a.stream),
              "prescale");
        send = task->scratch;
      }
      task->result_count = a.counts[team->rank];
      s = n.reducescatter(task->comm, send, a.recv, a.counts, a.dtype, task->op,
                          a.stream, req);
      break;
    case HVD_COLL_ALLGATHER:
      s = n.allgatherv(task->comm, a.send, a.counts[team->rank], a.recv,
                       a.counts, a.displs, a.dtype, a.stream, req);
      break;
    case HVD_COLL_BROADCAST:
      s = n.broadcast(task->comm, a.recv, a.count, a.dtype, a.root, a.stream,
                      req);
      break;
    case HVD_COLL_ALLTOALL:
      s = n.alltoallv(task->comm, a.send, a.send_counts, a.send_displs, a.recv,
                      a.counts, a.displs, a.dtype, a.stream, req);
      break;
    case HVD_COLL_BARRIER:
      if (n.barrier) s = n.barrier(task->comm, req);
      break;
    default:
      break;
  }
  if (s != HVD_OK) {
    if (task->scratch) dev->mem_free(dev->ctx, a.device, task->scratch);
    if (s == HVD_ERR_UNSUPPORTED) {
      return decline("native: the transport declined this collective");
    }
    fail(s, "native: posting the collective failed");
  }
  *out = task.release();
  return HVD_OK;
}

hvd_status progress_task(hvd_task* task, hvd_completion* out) {
  if (hvd_status a = task->abort_reason.load(std::memory_order_acquire);
      a != HVD_OK) {
    if (out) {
      out->status = a;
      out->peer = task->abort_peer.load(std::memory_order_relaxed);
    }
    return a;
  }
  if (task->request) {
    int32_t done = 0;
    hvd_completion c{};
    c.struct_size = sizeof c;
    c.peer = -1;
    hvd_status s = task->api->native_test(task->p2p, task->request, &done, &c);
    if (s != HVD_OK) {
      hvd_plugin::set_last_error("native: native_test failed");
      return s;
    }
    if (!done) return HVD_AGAIN;
    task->request = nullptr;
    if (c.status != HVD_OK) {
      if (out) {
        out->status = c.status;
        out->peer = c.peer;
      }
      hvd_plugin::set_last_error("native: the transport's collective failed");
      return c.status;
    }
  }
  const hvd_coll_args& a = *task->args;
  if (a.postscale != 1.0 && task->result_count > 0) {
    const hvd_device_api* dev = task->host->device;
    hvd_status s = dev->scale(dev->ctx, a.device, a.dtype, a.recv,
                              task->result_count, a.postscale, a.stream);
    task->result_count = 0;
    if (s != HVD_OK) {
      hvd_plugin::set_last_error("native: postscale failed");
      return s;
    }
  }
  if (out) {
    out->status = HVD_OK;
    out->peer = -1;
  }
  return HVD_OK;
}

void free_task(hvd_task* task) {
  if (task->scratch) {
    const hvd_device_api* dev = task->host->device;
    dev->mem_free(dev->ctx, task->args->device, task->scratch);
    task->scratch = nullptr;
  }
  task->pool->give(task);
}

}  // namespace hvd::reducers::native
