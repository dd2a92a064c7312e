/*
 * The ring reducer under another name (FORWARD_NAME), loaded from FORWARD_TO,
 * except that on world rank LATE_RANK a task starts the ring's only
 * LATE_MS milliseconds after it was posted: its peers' tasks wait for it
 * meanwhile, as for a slow peer, while its background thread stays free
 * (progress says HVD_AGAIN until then, and blocks nothing).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

#include "horovod/reducer.h"

struct hvd_task_s {
  hvd_reducer* ring; /* the ring's instance: post goes there */
  const hvd_coll_args* args;
  const hvd_p2p_api* p2p_api;
  hvd_p2p* p2p;
  int64_t start_ns; /* when the ring's task is posted */
  hvd_task* inner;  /* the ring's task; NULL until posted */
  hvd_status abort_reason;
  int32_t abort_peer;
};

typedef const hvd_reducer_api* (*entry_fn)(uint32_t, uint32_t);

static hvd_reducer_api table;
static const hvd_reducer_api* ring;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static hvd_status late_post(hvd_reducer* r, const hvd_coll_args* args,
                            const hvd_p2p_api* p2p_api, hvd_p2p* p2p,
                            hvd_task** out) {
  const hvd_team* team = p2p_api->team(p2p);
  hvd_task* task = (hvd_task*)calloc(1, sizeof *task);
  if (task == NULL) return HVD_ERR_OUT_OF_MEMORY;
  task->ring = r;
  task->args = args;
  task->p2p_api = p2p_api;
  task->p2p = p2p;
  task->start_ns = now_ns();
  if (team->world_ranks[team->rank] == LATE_RANK) {
    task->start_ns += (int64_t)LATE_MS * 1000000;
  }
  task->abort_peer = -1;
  *out = task;
  return HVD_OK;
}

static hvd_status late_progress(hvd_task* task, hvd_completion* out) {
  if (task->abort_reason != HVD_OK) {
    out->status = task->abort_reason;
    out->peer = task->abort_peer;
    out->bytes = 0;
    return task->abort_reason;
  }
  if (task->inner == NULL) {
    hvd_status s;
    if (now_ns() < task->start_ns) return HVD_AGAIN;
    s = ring->post(task->ring, task->args, task->p2p_api, task->p2p,
                   &task->inner);
    if (s != HVD_OK) {
      task->inner = NULL;
      out->status = s;
      out->peer = -1;
      out->bytes = 0;
      return s;
    }
  }
  return ring->progress(task->inner, out);
}

static hvd_status late_task_free(hvd_task* task) {
  hvd_status s = task->inner ? ring->task_free(task->inner) : HVD_OK;
  free(task);
  return s;
}

static hvd_status late_abort_task(hvd_task* task, hvd_status reason,
                                  int32_t peer) {
  if (task->inner) return ring->abort_task(task->inner, reason, peer);
  if (task->abort_reason == HVD_OK) {
    task->abort_reason = reason;
    task->abort_peer = peer;
  }
  return HVD_OK;
}

HVD_EXPORT const hvd_reducer_api* hvd_reducer_get_api(uint32_t major,
                                                      uint32_t minor) {
  if (table.name != NULL) return &table;
  void* plugin = dlopen(FORWARD_TO, RTLD_NOW | RTLD_LOCAL);
  if (plugin == NULL) return NULL;
  entry_fn entry = (entry_fn)dlsym(plugin, HVD_REDUCER_ENTRY);
  ring = entry ? entry(major, minor) : NULL;
  if (ring == NULL) return NULL;
  table = *ring;
  table.post = late_post;
  table.progress = late_progress;
  table.task_free = late_task_free;
  table.abort_task = late_abort_task;
  table.name = FORWARD_NAME;
  return &table;
}
