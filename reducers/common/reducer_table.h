// The C table of a built-in reducer, written once for all of them: the
// plugin hands over its own init, post and task calls (the schedule
// engine's task_progress/task_free/task_abort from task.h, or its own) and
// its op-aware score function, and gets the shared header, finalize,
// last_error, score_op and the 1.0 score() for cores before 1.2.
// HVD_REDUCER_ENTRY_POINT exports the table as the plugin's entry point.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "horovod/reducer.h"
#include "horovod_plugin/boundary.h"

namespace hvd::reducers {

struct ReducerCalls {
  decltype(hvd_reducer_api::init) init;
  decltype(hvd_reducer_api::post) post;
  decltype(hvd_reducer_api::progress) progress;
  decltype(hvd_reducer_api::task_free) task_free;
  decltype(hvd_reducer_api::abort_task) abort_task;
};

using ScoreOp = std::remove_pointer_t<decltype(hvd_reducer_api::score_op)>;

// Reducer is the plugin's hvd_reducer_s, complete where this is called:
// finalize deletes it. `Score` is the plugin's score_op; the 1.0 score()
// (asked only by cores before 1.2) answers for `legacy_op` on float32.
template <typename Reducer, ScoreOp* Score,
          hvd_reduce_op legacy_op = HVD_OP_SUM>
hvd_reducer_api reducer_table(const char* name, const ReducerCalls& calls) {
  hvd_reducer_api t;
  std::memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.kind = HVD_PLUGIN_REDUCER;
  t.abi_major = HVD_ABI_VERSION_MAJOR;
  t.abi_minor = HVD_ABI_VERSION_MINOR;
  t.name = name;
  t.version = "1.0";
  t.init = calls.init;
  t.finalize = [](hvd_reducer* r) -> hvd_status {
    delete static_cast<Reducer*>(r);
    return HVD_OK;
  };
  t.last_error = [](hvd_reducer*) { return hvd_plugin::last_error(); };
  t.score = [](hvd_reducer* r, hvd_collective coll, const hvd_team* team,
               hvd_mem_kind mem, hvd_score_range* ranges, size_t* count) {
    return Score(r, coll, legacy_op, HVD_FLOAT32, team, mem, ranges, count);
  };
  t.score_op = Score;
  t.post = calls.post;
  t.progress = calls.progress;
  t.task_free = calls.task_free;
  t.abort_task = calls.abort_task;
  // Calls from a waiting thread too, one at a time: a reducer here keeps
  // its state in its instance and tasks, none in a thread.
  t.threading = HVD_THREADING_SERIALIZED;
  return t;
}

}  // namespace hvd::reducers

// Defines the plugin's entry point, hvd_reducer_get_api: the table that the
// expression (a reducer_table call) builds on the first call, for a core of
// this ABI major version; NULL for any other. Written once per plugin, in
// its own namespace after its calls, so that they are named unqualified.
#define HVD_REDUCER_ENTRY_POINT(...)                                \
  extern "C" HVD_EXPORT const hvd_reducer_api* hvd_reducer_get_api( \
      uint32_t core_major, uint32_t) {                              \
    static const hvd_reducer_api table = __VA_ARGS__;               \
    return core_major == HVD_ABI_VERSION_MAJOR ? &table : nullptr;  \
  }
