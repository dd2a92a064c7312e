// The tree reducer's ABI table: options, scores and post().
#include <memory>

#include "../common/alltoall.h"
#include "../common/collective.h"
#include "../common/options.h"
#include "../common/reducer_table.h"
#include "../common/score_list.h"
#include "../common/task.h"
#include "horovod/reducer.h"
#include "horovod_plugin/boundary.h"
#include "tree.h"

using hvd_plugin::fail;
using hvd_plugin::guarded;

struct hvd_reducer_s {
  explicit hvd_reducer_s(const hvd_host* host) : core(host) {}
  hvd::reducers::ReducerCore core;
  hvd::reducers::tree::Options options;
};

namespace hvd::reducers::tree {
namespace {

// Below this a tree's log2(n) steps beat the ring's 2(n-1).
constexpr uint64_t kSmall = uint64_t(64) << 10;
// Allreduce, measured (horovod-bench --sweep, 2 to 4 ranks over shm): the
// tree is fastest below kSmallAllreduce, and still ahead of the others up
// to kMidAllreduce off a power of two, where halving-doubling folds.
constexpr uint64_t kSmallAllreduce = uint64_t(256) << 10;
constexpr uint64_t kMidAllreduce = uint64_t(1) << 20;

hvd_status init(const hvd_host* host, hvd_reducer** out) {
  return guarded([&] {
    check_host(host, "tree");
    if (out == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "tree: out is NULL");
    auto r = std::make_unique<hvd_reducer_s>(host);
    read_options(
        host,
        {{"segment_bytes", &r->options.segment_bytes, 64, uint64_t(1) << 30}},
        {});
    *out = r.release();
    return HVD_OK;
  });
}

hvd_status score(hvd_reducer*, hvd_collective coll, hvd_reduce_op op, hvd_dtype,
                 const hvd_team* team, hvd_mem_kind mem,
                 hvd_score_range* ranges, size_t* count) {
  ScoreList list;
  if (!list.open("tree", ranges, count)) return HVD_ERR_INVALID_ARGUMENT;
  if (mem != HVD_MEM_HOST || team == nullptr || !kernel_op(coll, op)) {
    return HVD_OK;
  }
  switch (coll) {
    case HVD_COLL_ALLREDUCE:
      list.add(0, kSmallAllreduce, 80);
      list.add(kSmallAllreduce, kMidAllreduce, 50);
      list.add(kMidAllreduce, UINT64_MAX, 10);
      break;
    case HVD_COLL_BROADCAST:
      list.add(0, kSmall, 80);
      list.add(kSmall, UINT64_MAX, 10);
      break;
    case HVD_COLL_ALLGATHER:
      list.add(0, kSmall, 70);
      list.add(kSmall, UINT64_MAX, 10);
      break;
    case HVD_COLL_BARRIER:
      list.add(0, UINT64_MAX, 90);
      break;
    case HVD_COLL_ALLTOALL:
    case HVD_COLL_REDUCESCATTER:
      // Latency-bound sizes only: beyond them the ring's volume wins.
      list.add(0, kSmall / 8, 70);
      list.add(kSmall / 8, UINT64_MAX, 5);
      break;
  }
  return HVD_OK;
}

hvd_status post(hvd_reducer* r, const hvd_coll_args* args,
                const hvd_p2p_api* api, hvd_p2p* p2p, hvd_task** out) {
  return guarded([&] {
    if (r == nullptr || out == nullptr) {
      fail(HVD_ERR_INVALID_ARGUMENT, "tree post: reducer or out is NULL");
    }
    const Collective c = read_collective(args, api, p2p);
    const char* name = nullptr;
    switch (c.kind) {
      case HVD_COLL_ALLREDUCE:
        name = "tree allreduce";
        break;
      case HVD_COLL_ALLGATHER:
        name = "tree allgather";
        break;
      case HVD_COLL_BROADCAST:
        name = "tree broadcast";
        break;
      case HVD_COLL_BARRIER:
        name = "tree barrier";
        break;
      case HVD_COLL_ALLTOALL:
        name = "tree alltoall";
        break;
      case HVD_COLL_REDUCESCATTER:
        name = "tree reducescatter";
        break;
      default:
        fail(HVD_ERR_UNSUPPORTED,
             std::string("tree does not offer ") + collective_name(c.kind));
    }
    TaskGuard task(r->core.begin_task(name, c, api, p2p));
    switch (c.kind) {
      case HVD_COLL_ALLREDUCE:
        build_allreduce(*task, c, r->options);
        break;
      case HVD_COLL_ALLGATHER:
        build_allgather(*task, c);
        break;
      case HVD_COLL_BROADCAST:
        build_broadcast(*task, c, r->options);
        break;
      case HVD_COLL_BARRIER:
        build_barrier(*task, c);
        break;
      case HVD_COLL_ALLTOALL:
        build_pairwise_alltoall(*task, c, 0);  // all at once
        break;
      case HVD_COLL_REDUCESCATTER:
        build_reducescatter(*task, c, r->options);
        break;
    }
    task->schedule.start();
    *out = task.release();
    return HVD_OK;
  });
}

}  // namespace

HVD_REDUCER_ENTRY_POINT(reducer_table<hvd_reducer_s, score>(
    "tree", {init, post, task_progress, task_free, task_abort}))

}  // namespace hvd::reducers::tree
