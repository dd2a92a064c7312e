// The native reducer's ABI table: it runs a collective with the native
// collectives of the transport serving the team (MPI's MPI_Iallreduce,
// NCCL's, Gloo's), and answers HVD_ERR_UNSUPPORTED where that transport has
// none, so the planner falls through to the point-to-point algorithms.
#include <memory>

#include "../common/reducer_table.h"
#include "../common/score_list.h"
#include "horovod/reducer.h"
#include "horovod_plugin/boundary.h"
#include "task.h"

using hvd_plugin::fail;
using hvd_plugin::guarded;

struct hvd_reducer_s {
  const hvd_host* host = nullptr;
  hvd::reducers::native::TaskPool tasks;
};

namespace hvd::reducers::native {
namespace {

// Above ring (80) and tree wherever it is offered: a library's own
// collectives are tuned for its fabric, and where the team's transport has
// none, post() declines and the planner takes the next.
constexpr int32_t kScore = 90;

hvd_status init(const hvd_host* host, hvd_reducer** out) {
  return guarded([&] {
    if (host == nullptr || out == nullptr) {
      fail(HVD_ERR_INVALID_ARGUMENT, "native: host or out is NULL");
    }
    if (host->abi_major != HVD_ABI_VERSION_MAJOR ||
        !HVD_HAS_FIELD(host, hvd_host, device) || host->device == nullptr) {
      fail(HVD_ERR_VERSION, "native: the host table lacks the device layer");
    }
    if (host->config != nullptr && host->config->count > 0) {
      host->config_error(host->ctx, host->config->values[0].key,
                         "the native reducer has no options");
      fail(HVD_ERR_CONFIG, "native: unknown key in [reducer.native]");
    }
    auto r = std::make_unique<hvd_reducer_s>();
    r->host = host;
    *out = r.release();
    return HVD_OK;
  });
}

hvd_status score(hvd_reducer*, hvd_collective coll, hvd_reduce_op op, hvd_dtype,
                 const hvd_team* team, hvd_mem_kind, hvd_score_range* ranges,
                 size_t* count) {
  ScoreList list;
  if (!list.open("native", ranges, count)) return HVD_ERR_INVALID_ARGUMENT;
  if (team == nullptr || team->size < 2 || !kernel_op(coll, op)) return HVD_OK;
  switch (coll) {
    case HVD_COLL_ALLREDUCE:
    case HVD_COLL_ALLGATHER:
    case HVD_COLL_BROADCAST:
    case HVD_COLL_ALLTOALL:
    case HVD_COLL_REDUCESCATTER:
    case HVD_COLL_BARRIER:
      list.add(0, UINT64_MAX, kScore);
      break;
    default:
      break;
  }
  return HVD_OK;
}

hvd_status post(hvd_reducer* r, const hvd_coll_args* args,
                const hvd_p2p_api* api, hvd_p2p* p2p, hvd_task** out) {
  return guarded([&] {
    if (r == nullptr || out == nullptr) {
      fail(HVD_ERR_INVALID_ARGUMENT, "native post: reducer or out is NULL");
    }
    return start_task(r->host, r->tasks, args, api, p2p, out);
  });
}

hvd_status progress(hvd_task* task, hvd_completion* out) {
  if (task == nullptr) return HVD_ERR_INVALID_ARGUMENT;
  return progress_task(task, out);
}

hvd_status task_free(hvd_task* task) {
  if (task) free_task(task);
  return HVD_OK;
}

hvd_status abort_task(hvd_task* task, hvd_status reason, int32_t peer) {
  if (task == nullptr) return HVD_ERR_INVALID_ARGUMENT;
  if (task->abort_claimed.exchange(true)) return HVD_OK;
  task->abort_peer.store(peer, std::memory_order_relaxed);
  task->abort_reason.store(reason == HVD_OK ? HVD_ERR_ABORTED : reason,
                           std::memory_order_release);
  return HVD_OK;
}

}  // namespace

HVD_REDUCER_ENTRY_POINT(reducer_table<hvd_reducer_s, score>(
    "native", {init, post, progress, task_free, abort_task}))

}  // namespace hvd::reducers::native
