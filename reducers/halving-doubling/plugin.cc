// The halving-doubling reducer's ABI table: options, scores and post().
#include <memory>

#include "../common/collective.h"
#include "../common/options.h"
#include "../common/reducer_table.h"
#include "../common/score_list.h"
#include "../common/task.h"
#include "halving_doubling.h"
#include "horovod/reducer.h"
#include "horovod_plugin/boundary.h"

using hvd_plugin::fail;
using hvd_plugin::guarded;

struct hvd_reducer_s {
  explicit hvd_reducer_s(const hvd_host* host) : core(host) {}
  hvd::reducers::ReducerCore core;
  hvd::reducers::halving_doubling::Options options;
};

namespace hvd::reducers::halving_doubling {
namespace {

hvd_status init(const hvd_host* host, hvd_reducer** out) {
  return guarded([&] {
    check_host(host, "halving-doubling");
    if (out == nullptr) {
      fail(HVD_ERR_INVALID_ARGUMENT, "halving-doubling: out is NULL");
    }
    auto r = std::make_unique<hvd_reducer_s>(host);
    read_pipeline_options(host, &r->options.chunk_bytes,
                          &r->options.pipeline_depth);
    *out = r.release();
    return HVD_OK;
  });
}

// Between the tree's small messages and the ring's large ones: as few steps
// as the tree (2 log2 p) with the ring's volume. Off a power of two the
// fold adds a whole-buffer transfer, which the ring does not pay.
hvd_status score(hvd_reducer*, hvd_collective coll, hvd_reduce_op op, hvd_dtype,
                 const hvd_team* team, hvd_mem_kind mem,
                 hvd_score_range* ranges, size_t* count) {
  ScoreList list;
  if (!list.open("halving-doubling", ranges, count)) {
    return HVD_ERR_INVALID_ARGUMENT;
  }
  if (mem != HVD_MEM_HOST || team == nullptr || !kernel_op(coll, op)) {
    return HVD_OK;
  }
  if (coll == HVD_COLL_ALLREDUCE) {
    const bool even = is_power_of_two(team->size);
    // Measured (horovod-bench --sweep, 2 to 4 ranks over shm): fastest
    // from 256 KiB to 1 MiB on a power of two; the tree below and off a
    // power of two, the ring above.
    list.add(0, uint64_t(256) << 10, 40);
    list.add(uint64_t(256) << 10, uint64_t(1) << 20, even ? 85 : 40);
    list.add(uint64_t(1) << 20, UINT64_MAX, even ? 70 : 50);
  }
  return HVD_OK;
}

hvd_status post(hvd_reducer* r, const hvd_coll_args* args,
                const hvd_p2p_api* api, hvd_p2p* p2p, hvd_task** out) {
  return guarded([&] {
    if (r == nullptr || out == nullptr) {
      fail(HVD_ERR_INVALID_ARGUMENT,
           "halving-doubling post: reducer or out is NULL");
    }
    const Collective c = read_collective(args, api, p2p);
    if (c.kind != HVD_COLL_ALLREDUCE) {
      fail(HVD_ERR_UNSUPPORTED,
           std::string("halving-doubling does not offer ") +
               collective_name(c.kind));
    }
    TaskGuard task(
        r->core.begin_task("halving-doubling allreduce", c, api, p2p));
    build_allreduce(*task, c, r->options);
    task->schedule.start();
    *out = task.release();
    return HVD_OK;
  });
}

}  // namespace

HVD_REDUCER_ENTRY_POINT(reducer_table<hvd_reducer_s, score>(
    "halving-doubling", {init, post, task_progress, task_free, task_abort}))

}  // namespace hvd::reducers::halving_doubling
