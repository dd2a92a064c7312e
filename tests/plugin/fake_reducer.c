/*
 * A reducer table that does nothing useful, for the loader's tests:
 *   FAKE_MISSING=field   that function pointer is NULL
 *   FAKE_INIT_ERROR="m"  init fails with HVD_ERR_OUT_OF_MEMORY and
 *                        last_error "m"
 */
#include <string.h>

#include "horovod/reducer.h"

static const char* fake_error = "";

static hvd_status fake_init(const hvd_host* host, hvd_reducer** out) {
  (void)host;
#ifdef FAKE_INIT_ERROR
  fake_error = FAKE_INIT_ERROR;
  *out = NULL;
  return HVD_ERR_OUT_OF_MEMORY;
#else
  static int instance;
  *out = (hvd_reducer*)&instance;
  return HVD_OK;
#endif
}
static hvd_status fake_finalize(hvd_reducer* r) {
  (void)r;
  return HVD_OK;
}
static const char* fake_last_error(hvd_reducer* r) {
  (void)r;
  return fake_error;
}
static hvd_status fake_score(hvd_reducer* r, hvd_collective coll,
                             const hvd_team* team, hvd_mem_kind mem,
                             hvd_score_range* ranges, size_t* count) {
  (void)r, (void)coll, (void)team, (void)mem, (void)ranges;
  *count = 0;
  return HVD_OK;
}
static hvd_status fake_post(hvd_reducer* r, const hvd_coll_args* args,
                            const hvd_p2p_api* p2p_api, hvd_p2p* p2p,
                            hvd_task** out) {
  (void)r, (void)args, (void)p2p_api, (void)p2p, (void)out;
  return HVD_ERR_UNSUPPORTED;
}
static hvd_status fake_progress(hvd_task* task, hvd_completion* out) {
  (void)task, (void)out;
  return HVD_ERR_UNSUPPORTED;
}
static hvd_status fake_task_free(hvd_task* task) {
  (void)task;
  return HVD_OK;
}
static hvd_status fake_abort_task(hvd_task* task, hvd_status reason,
                                  int32_t peer) {
  (void)task, (void)reason, (void)peer;
  return HVD_OK;
}

HVD_EXPORT const hvd_reducer_api* hvd_reducer_get_api(uint32_t major,
                                                      uint32_t minor) {
  static hvd_reducer_api api;
  (void)major, (void)minor;
  memset(&api, 0, sizeof api);
  api.struct_size = sizeof api;
  api.kind = HVD_PLUGIN_REDUCER;
  api.abi_major = HVD_ABI_VERSION_MAJOR;
  api.abi_minor = HVD_ABI_VERSION_MINOR;
  api.name = "fake";
  api.version = "0.0.1";
  api.init = fake_init;
  api.finalize = fake_finalize;
  api.last_error = fake_last_error;
  api.score = fake_score;
  api.post = fake_post;
  api.progress = fake_progress;
  api.task_free = fake_task_free;
  api.abort_task = fake_abort_task;
#ifdef FAKE_MISSING
  api.FAKE_MISSING = NULL;
#endif
  return &api;
}
