// The C table of a built-in reducer, written once for all of them: the
// plugin hands over its own init, score, post and task calls (the schedule
// engine's task_progress/task_free/task_abort from task.h, or its own), and
// gets the shared header, finalize and last_error.
#pragma once

#include <cstring>

#include "horovod/reducer.h"
#include "horovod_plugin/boundary.h"

namespace hvd::reducers {

struct ReducerCalls {
  decltype(hvd_reducer_api::init) init;
  decltype(hvd_reducer_api::score) score;
  decltype(hvd_reducer_api::post) post;
  decltype(hvd_reducer_api::progress) progress;
  decltype(hvd_reducer_api::task_free) task_free;
  decltype(hvd_reducer_api::abort_task) abort_task;
};

// Reducer is the plugin's hvd_reducer_s, complete where this is called:
// finalize deletes it.
template <typename Reducer>
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
  t.score = calls.score;
  t.post = calls.post;
  t.progress = calls.progress;
  t.task_free = calls.task_free;
  t.abort_task = calls.abort_task;
  return t;
}

}  // namespace hvd::reducers
