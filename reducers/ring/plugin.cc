// The ring reducer's ABI table: options, scores and post().
#include <memory>

#include "../common/alltoall.h"
#include "../common/collective.h"
#include "../common/options.h"
#include "../common/reducer_table.h"
#include "../common/score_list.h"
#include "../common/task.h"
#include "horovod/reducer.h"
#include "horovod_plugin/boundary.h"
#include "ring.h"

using hvd_plugin::fail;
using hvd_plugin::guarded;

struct hvd_reducer_s {
  explicit hvd_reducer_s(const hvd_host* host) : core(host) {}
  hvd::reducers::ReducerCore core;
  hvd::reducers::ring::Options options;
};

namespace hvd::reducers::ring {
namespace {

// Below this the tree's fewer steps win; above it the ring's bandwidth.
constexpr uint64_t kLarge = uint64_t(64) << 10;
// Allreduce, measured (horovod-bench --sweep, 2 to 4 ranks over shm): the
// ring is fastest from 1 MiB, and ahead of the tree from kMidAllreduce on a
// power of two (off one the tree stays ahead up to 1 MiB).
constexpr uint64_t kMidAllreduce = uint64_t(256) << 10;
constexpr uint64_t kLargeAllreduce = uint64_t(1) << 20;

hvd_status init(const hvd_host* host, hvd_reducer** out) {
  return guarded([&] {
    check_host(host, "ring");
    if (out == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "ring: out is NULL");
    auto r = std::make_unique<hvd_reducer_s>(host);
    read_pipeline_options(host, &r->options.chunk_bytes,
                          &r->options.pipeline_depth);
    *out = r.release();
    return HVD_OK;
  });
}

hvd_status score(hvd_reducer*, hvd_collective coll, hvd_reduce_op op, hvd_dtype,
                 const hvd_team* team, hvd_mem_kind mem,
                 hvd_score_range* ranges, size_t* count) {
  ScoreList list;
  if (!list.open("ring", ranges, count)) return HVD_ERR_INVALID_ARGUMENT;
  if (mem != HVD_MEM_HOST || team == nullptr || !kernel_op(coll, op)) {
    return HVD_OK;
  }
  switch (coll) {
    case HVD_COLL_ALLREDUCE: {
      const bool power_of_two = (team->size & (team->size - 1)) == 0;
      list.add(0, kMidAllreduce, 20);
      list.add(kMidAllreduce, kLargeAllreduce, power_of_two ? 60 : 20);
      list.add(kLargeAllreduce, UINT64_MAX, 80);
      break;
    }
    case HVD_COLL_ALLGATHER:
    case HVD_COLL_BROADCAST:
      list.add(0, kLarge, 20);
      list.add(kLarge, UINT64_MAX, 80);
      break;
    case HVD_COLL_REDUCESCATTER:
    case HVD_COLL_ALLTOALL:
      list.add(0, UINT64_MAX, 50);
      break;
    case HVD_COLL_BARRIER:
      list.add(0, UINT64_MAX, 10);
      break;
  }
  return HVD_OK;
}

hvd_status post(hvd_reducer* r, const hvd_coll_args* args,
                const hvd_p2p_api* api, hvd_p2p* p2p, hvd_task** out) {
  return guarded([&] {
    if (r == nullptr || out == nullptr) {
      fail(HVD_ERR_INVALID_ARGUMENT, "ring post: reducer or out is NULL");
    }
    const Collective c = read_collective(args, api, p2p);
    static const char* const names[] = {"ring allreduce",     "ring allgather",
                                        "ring broadcast",     "ring alltoall",
                                        "ring reducescatter", "ring barrier"};
    TaskGuard task(r->core.begin_task(names[c.kind], c, api, p2p));
    const Options& o = r->options;
    switch (c.kind) {
      case HVD_COLL_ALLREDUCE:
        build_allreduce(*task, c, o);
        break;
      case HVD_COLL_ALLGATHER:
        build_allgather(*task, c, o);
        break;
      case HVD_COLL_BROADCAST:
        build_broadcast(*task, c, o);
        break;
      case HVD_COLL_ALLTOALL:
        build_pairwise_alltoall(*task, c, (size_t)o.pipeline_depth);
        break;
      case HVD_COLL_REDUCESCATTER:
        build_reducescatter(*task, c, o);
        break;
      case HVD_COLL_BARRIER:
        build_barrier(*task, c);
        break;
    }
    task->schedule.start();
    *out = task.release();
    return HVD_OK;
  });
}

}  // namespace

HVD_REDUCER_ENTRY_POINT(reducer_table<hvd_reducer_s, score>(
    "ring", {init, post, task_progress, task_free, task_abort}))

}  // namespace hvd::reducers::ring
