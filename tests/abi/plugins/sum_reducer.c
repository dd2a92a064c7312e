/*
 * A small but real reducer built against the frozen 1.0 headers: allreduce
 * of float32 sums (and averages, through postscale) on host memory, every
 * rank sending its buffer to every other and adding in rank order, so every
 * rank gets the same bits. Scores itself for small messages only.
 */
#include <string.h>

#include "horovod/reducer.h"

struct hvd_reducer_s {
  const hvd_host* host;
};

struct hvd_task_s {
  hvd_reducer* reducer;
  const hvd_coll_args* args;
  const hvd_p2p_api* p2p_api;
  hvd_p2p* p2p;
  int32_t rank, size;
  float* gathered;           /* size * count floats, by team rank */
  hvd_p2p_request** pending; /* 2 * size slots, NULL once done */
  hvd_status abort_reason;
  int32_t abort_peer;
};

static const char* last_error_text = "";

static hvd_status fail(hvd_status status, const char* text) {
  last_error_text = text;
  return status;
}

static hvd_status sum_init(const hvd_host* host, hvd_reducer** out) {
  hvd_reducer* r = (hvd_reducer*)host->mem_alloc(host->ctx, sizeof *r, 8);
  if (r == NULL) return fail(HVD_ERR_OUT_OF_MEMORY, "no memory");
  r->host = host;
  *out = r;
  return HVD_OK;
}

static hvd_status sum_finalize(hvd_reducer* r) {
  r->host->mem_free(r->host->ctx, r);
  return HVD_OK;
}

static const char* sum_last_error(hvd_reducer* r) {
  (void)r;
  return last_error_text;
}

static hvd_status sum_score(hvd_reducer* r, hvd_collective coll,
                            const hvd_team* team, hvd_mem_kind mem,
                            hvd_score_range* ranges, size_t* count) {
  (void)r, (void)team;
  if (coll != HVD_COLL_ALLREDUCE || mem != HVD_MEM_HOST || *count < 1) {
    *count = 0;
    return HVD_OK;
  }
  ranges[0].min_bytes = 0;
  ranges[0].max_bytes = 64 * 1024;
  ranges[0].score = 10;
  *count = 1;
  return HVD_OK;
}

static void sum_release(hvd_task* task) {
  const hvd_host* host = task->reducer->host;
  if (task->gathered != NULL) host->mem_free(host->ctx, task->gathered);
  if (task->pending != NULL) host->mem_free(host->ctx, task->pending);
  host->mem_free(host->ctx, task);
}

static hvd_status sum_post(hvd_reducer* r, const hvd_coll_args* args,
                           const hvd_p2p_api* p2p_api, hvd_p2p* p2p,
                           hvd_task** out) {
  const hvd_host* host = r->host;
  const hvd_team* team = p2p_api->team(p2p);
  size_t bytes = args->count * sizeof(float);
  hvd_task* task;
  int32_t peer;
  if (args->collective != HVD_COLL_ALLREDUCE || args->dtype != HVD_FLOAT32 ||
      (args->op != HVD_OP_SUM && args->op != HVD_OP_AVERAGE) ||
      args->device.kind != HVD_MEM_HOST) {
    return fail(HVD_ERR_UNSUPPORTED, "float32 sums on host memory only");
  }
  task = (hvd_task*)host->mem_alloc(host->ctx, sizeof *task, 8);
  if (task == NULL) return fail(HVD_ERR_OUT_OF_MEMORY, "no memory");
  memset(task, 0, sizeof *task);
  task->reducer = r;
  task->args = args;
  task->p2p_api = p2p_api;
  task->p2p = p2p;
  task->rank = team->rank;
  task->size = team->size;
  task->abort_peer = -1;
  task->gathered =
      (float*)host->mem_alloc(host->ctx, bytes * (size_t)team->size + 1, 64);
  task->pending = (hvd_p2p_request**)host->mem_alloc(
      host->ctx, 2 * sizeof(hvd_p2p_request*) * (size_t)team->size, 8);
  if (task->gathered == NULL || task->pending == NULL) {
    sum_release(task);
    return fail(HVD_ERR_OUT_OF_MEMORY, "no memory");
  }
  memset(task->pending, 0, 2 * sizeof(hvd_p2p_request*) * (size_t)team->size);
  if (bytes > 0) {
    memcpy(task->gathered + (size_t)team->rank * args->count, args->send,
           bytes);
  }
  for (peer = 0; peer < team->size; ++peer) {
    hvd_status s;
    if (peer == team->rank) continue;
    s = p2p_api->isend(p2p, peer, args->send, bytes, 0,
                       &task->pending[2 * peer]);
    if (s == HVD_OK) {
      s = p2p_api->irecv(p2p, peer, task->gathered + (size_t)peer * args->count,
                         bytes, 0, &task->pending[2 * peer + 1]);
    }
    if (s != HVD_OK) {
      sum_release(task);
      return fail(s, "could not start a transfer");
    }
  }
  *out = task;
  return HVD_OK;
}

static hvd_status sum_progress(hvd_task* task, hvd_completion* out) {
  const hvd_coll_args* args = task->args;
  int32_t i, busy = 0;
  size_t k;
  out->peer = -1;
  out->bytes = 0;
  if (task->abort_reason != HVD_OK) {
    out->status = task->abort_reason;
    out->peer = task->abort_peer;
    return task->abort_reason;
  }
  for (i = 0; i < 2 * task->size; ++i) {
    int32_t done = 0;
    hvd_completion c;
    hvd_status s;
    if (task->pending[i] == NULL) continue;
    c.struct_size = sizeof c;
    s = task->p2p_api->test(task->p2p, task->pending[i], &done, &c);
    if (s != HVD_OK) return s;
    if (!done) {
      ++busy;
      continue;
    }
    task->pending[i] = NULL;
    if (c.status != HVD_OK) {
      *out = c;
      return c.status;
    }
  }
  if (busy > 0) return HVD_AGAIN;
  for (k = 0; k < args->count; ++k) {
    double sum = 0.0;
    float total;
    for (i = 0; i < task->size; ++i) {
      sum += (double)(task->gathered[(size_t)i * args->count + k] *
                      (float)args->prescale);
    }
    total = (float)sum * (float)args->postscale;
    memcpy((float*)args->recv + k, &total, sizeof total);
  }
  out->status = HVD_OK;
  out->bytes = args->count * sizeof(float);
  return HVD_OK;
}

static hvd_status sum_task_free(hvd_task* task) {
  sum_release(task);
  return HVD_OK;
}

static hvd_status sum_abort_task(hvd_task* task, hvd_status reason,
                                 int32_t peer) {
  if (task->abort_reason == HVD_OK) {
    task->abort_reason = reason;
    task->abort_peer = peer;
  }
  return HVD_OK;
}

HVD_EXPORT const hvd_reducer_api* hvd_reducer_get_api(uint32_t major,
                                                      uint32_t minor);

HVD_EXPORT const hvd_reducer_api* hvd_reducer_get_api(uint32_t major,
                                                      uint32_t minor) {
  static hvd_reducer_api api;
  (void)minor;
  if (major != HVD_ABI_VERSION_MAJOR) return NULL;
  memset(&api, 0, sizeof api);
  api.struct_size = sizeof api;
  api.kind = HVD_PLUGIN_REDUCER;
  api.abi_major = HVD_ABI_VERSION_MAJOR;
  api.abi_minor = HVD_ABI_VERSION_MINOR;
  api.name = "sum";
  api.version = "1.0-frozen";
  api.init = sum_init;
  api.finalize = sum_finalize;
  api.last_error = sum_last_error;
  api.score = sum_score;
  api.post = sum_post;
  api.progress = sum_progress;
  api.task_free = sum_task_free;
  api.abort_task = sum_abort_task;
  return &api;
}
