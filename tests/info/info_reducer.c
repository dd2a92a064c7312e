/*
 * A reducer that loads and checks but offers nothing (score count 0), so
 * horovod-info has a plugin of known name, version and ABI to list.
 */
#include <string.h>

#include "horovod/reducer.h"

static hvd_status info_init(const hvd_host* host, hvd_reducer** out) {
  static int instance;
  (void)host;
  *out = (hvd_reducer*)&instance;
  return HVD_OK;
}
static hvd_status info_finalize(hvd_reducer* r) {
  (void)r;
  return HVD_OK;
}
static const char* info_last_error(hvd_reducer* r) {
  (void)r;
  return "";
}
static hvd_status info_score(hvd_reducer* r, hvd_collective coll,
                             const hvd_team* team, hvd_mem_kind mem,
                             hvd_score_range* ranges, size_t* count) {
  (void)r, (void)coll, (void)team, (void)mem, (void)ranges;
  *count = 0;
  return HVD_OK;
}
static hvd_status info_post(hvd_reducer* r, const hvd_coll_args* args,
                            const hvd_p2p_api* p2p_api, hvd_p2p* p2p,
                            hvd_task** out) {
  (void)r, (void)args, (void)p2p_api, (void)p2p, (void)out;
  return HVD_ERR_UNSUPPORTED;
}
static hvd_status info_progress(hvd_task* task, hvd_completion* out) {
  (void)task, (void)out;
  return HVD_ERR_UNSUPPORTED;
}
static hvd_status info_task_free(hvd_task* task) {
  (void)task;
  return HVD_OK;
}
static hvd_status info_abort_task(hvd_task* task, hvd_status reason,
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
  api.name = "infofixture";
  api.version = "9.8.7";
  api.init = info_init;
  api.finalize = info_finalize;
  api.last_error = info_last_error;
  api.score = info_score;
  api.post = info_post;
  api.progress = info_progress;
  api.task_free = info_task_free;
  api.abort_task = info_abort_task;
  return &api;
}
