// The adasum reducer's ABI table: scores and post(). It runs allreduce with
// op HVD_OP_ADASUM only and declines everything else.
#include <memory>

#include "../common/collective.h"
#include "../common/options.h"
#include "../common/reducer_table.h"
#include "../common/score_list.h"
#include "../common/task.h"
#include "adasum.h"
#include "horovod/reducer.h"
#include "horovod_plugin/boundary.h"

using hvd_plugin::fail;
using hvd_plugin::guarded;

struct hvd_reducer_s {
  explicit hvd_reducer_s(const hvd_host* host) : core(host) {}
  hvd::reducers::ReducerCore core;
};

namespace hvd::reducers::adasum {
namespace {

hvd_status init(const hvd_host* host, hvd_reducer** out) {
  return guarded([&] {
    check_host(host, "adasum");
    if (out == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "adasum: out is NULL");
    read_options(host, {}, {});  // it has none: any key is unknown
    *out = std::make_unique<hvd_reducer_s>(host).release();
    return HVD_OK;
  });
}

// Allreduce with op ADASUM, and nothing else. Every dtype and team size
// is offered so that post() can say why it declines (float16/32/64 on a
// power of two only): the others never run ADASUM, so there is no one to
// fall through to.
hvd_status score(hvd_reducer*, hvd_collective coll, hvd_reduce_op op, hvd_dtype,
                 const hvd_team* team, hvd_mem_kind mem,
                 hvd_score_range* ranges, size_t* count) {
  ScoreList list;
  if (!list.open("adasum", ranges, count)) return HVD_ERR_INVALID_ARGUMENT;
  if (mem == HVD_MEM_HOST && team != nullptr && coll == HVD_COLL_ALLREDUCE &&
      op == HVD_OP_ADASUM) {
    list.add(0, UINT64_MAX, 100);
  }
  return HVD_OK;
}

hvd_status post(hvd_reducer* r, const hvd_coll_args* args,
                const hvd_p2p_api* api, hvd_p2p* p2p, hvd_task** out) {
  return guarded([&] {
    if (r == nullptr || out == nullptr || args == nullptr) {
      fail(HVD_ERR_INVALID_ARGUMENT,
           "adasum post: reducer, args or out is NULL");
    }
    if (args->collective != HVD_COLL_ALLREDUCE || args->op != HVD_OP_ADASUM) {
      fail(HVD_ERR_UNSUPPORTED, "adasum runs allreduce with op ADASUM only");
    }
    // The common checks know the kernel ops; Adasum is none of them.
    hvd_coll_args checked = *args;
    checked.struct_size = std::min(args->struct_size, sizeof checked);
    checked.op = HVD_OP_SUM;
    const Collective c = read_collective(&checked, api, p2p);
    TaskGuard task(r->core.begin_task("adasum allreduce", c, api, p2p));
    build_allreduce(*task, c);
    task->schedule.start();
    *out = task.release();
    return HVD_OK;
  });
}

}  // namespace

HVD_REDUCER_ENTRY_POINT(reducer_table<hvd_reducer_s, score, HVD_OP_ADASUM>(
    "adasum", {init, post, task_progress, task_free, task_abort}))

}  // namespace hvd::reducers::adasum
