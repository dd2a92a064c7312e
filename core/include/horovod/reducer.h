/*
 * Reducer plugin ABI, version 1.x.
 *
 * A reducer runs one collective on a team as a non-blocking task over the
 * core's point-to-point layer (hvd_p2p) or over a transport's native
 * collectives. It owns no sockets and no memory registrations. The core
 * drives every task, one call at a time: post(), then progress() until it
 * stops answering HVD_AGAIN, then task_free(). abort_task() may be called
 * from any thread. Since 1.4 the calls may come from a thread waiting in
 * hvd_wait as well as from the background thread (docs/abi.md, Threads);
 * for a table built for an earlier minor, from the background thread only.
 *
 * Choice of reducer is data: each reducer scores message-size ranges per
 * collective and team; the planner picks the highest score, and rules in
 * horovod.toml override it. A post() that answers HVD_ERR_UNSUPPORTED makes
 * the planner fall through to the next candidate.
 *
 * Entry symbol: hvd_reducer_get_api (HVD_REDUCER_ENTRY).
 */
#ifndef HOROVOD_REDUCER_H
#define HOROVOD_REDUCER_H

#include "horovod/abi.h"
#include "horovod/host.h"
#include "horovod/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hvd_reducer_s hvd_reducer;
typedef struct hvd_task_s hvd_task;
typedef struct hvd_p2p_s hvd_p2p;
typedef struct hvd_p2p_request_s hvd_p2p_request;
struct hvd_coll_args;

/* ---- the core's point-to-point layer, as a reducer sees it ------------- */

/* Peers are team ranks. `step` is the reducer's own sub-tag (0 .. 2^16-1):
 * the core composes the transport tag from (process set, task sequence,
 * step, epoch) so concurrent tasks never cross. A peer on this host is
 * reached over the `intra` transport, others over `inter`. Where the core
 * opened `[transport] gpu` on every rank (the gpu scope), a task on device
 * memory (hvd_coll_args.device, e.g. CUDA) reaches every peer over that
 * transport instead; isend/irecv then answer HVD_ERR_UNSUPPORTED when it
 * has no point-to-point connections (NCCL: collectives only). Device
 * tensors the core stages through host memory (no gpu scope; fused or
 * scaled ops) reach the reducer as a task on host memory. Registrations and
 * message splitting are the core's business. */
typedef struct hvd_p2p_api {
  size_t struct_size;
  const hvd_extension* ext;

  const hvd_team* (*team)(hvd_p2p* p);

  hvd_status (*isend)(hvd_p2p* p, int32_t peer, const void* buf, size_t bytes,
                      uint32_t step, hvd_p2p_request** req);
  hvd_status (*irecv)(hvd_p2p* p, int32_t peer, void* buf, size_t bytes,
                      uint32_t step, hvd_p2p_request** req);
  /* *done = 1 once finished; the request is then freed. */
  hvd_status (*test)(hvd_p2p* p, hvd_p2p_request* req, int32_t* done,
                     hvd_completion* out);

  /* A sub-team of `count` members given by their ranks in this team, in the
   * order of their new ranks; this process must be one of them. Owned by
   * the core, freed with the task. Every member must build the same
   * sub-teams in the same order. */
  hvd_status (*subteam)(hvd_p2p* p, const int32_t* members, int32_t count,
                        hvd_p2p** out);

  /* The native collectives of the transport serving this team, and its
   * communicator, when it has them; NULL otherwise. On host memory,
   * "serving" means one transport reaches every other member (a team whose
   * members the core reaches over different transports, e.g. shm inside
   * the host and tcp across, has none). A task on device memory in a gpu
   * scope is served by the `[transport] gpu` transport for every team, so
   * this hands out that transport's collectives. The core creates the
   * communicator through comm_create on the first call for a team (members
   * and order), keeps it until it shuts down, and calls comm_abort when the
   * job fails; every member must make the call for the same teams in the
   * same order, as for subteam(). Requests the extension returns complete
   * through native_test() below. */
  const hvd_transport_collectives* (*native)(hvd_p2p* p, hvd_coll_comm** comm);

  /* Optional. The peer's copy of the task's buffer `which` (0: send, 1:
   * recv) when mapped here (shm), valid until the task is freed; else NULL.
   * NOT OFFERED by this 1.x core (always NULL); planned to move to an
   * extension in 2.0 (docs/abi.md, "Planned for 2.0"). */
  const void* (*peer_buffer)(hvd_p2p* p, int32_t peer, int32_t which);

  /* Since 1.1 (check HVD_HAS_FIELD(api, hvd_p2p_api, collective); NULL: not
   * offered). Posts a nested collective on the team of `p` (the task's own
   * context or one from subteam()), run by the reducer named `reducer`
   * (NULL or "": the planner's choice for that team, collective and size;
   * [reducer] load must name it). It completes through test() like a
   * message; the request's hvd_completion carries the nested task's status
   * and peer at fault, with bytes = 0. The nested task's messages and
   * sub-teams get tags of their own, so they never cross the caller's.
   * `args` and the buffers it names stay the caller's and must stay valid
   * until test() says done; every member of the team must post the same
   * nested collectives in the same order. HVD_ERR_UNSUPPORTED when the
   * reducer is not loaded, declines the collective, or none is offered. */
  hvd_status (*collective)(hvd_p2p* p, const char* reducer,
                           const struct hvd_coll_args* args,
                           hvd_p2p_request** req);

  /* Since 1.1 (check HVD_HAS_FIELD(api, hvd_p2p_api, native_test); NULL:
   * not offered). Tests a request returned by a native collective of
   * native(p, ...), through the test() of the transport that owns it
   * (then its progress(), when it needs that and the request is not
   * done): *done = 1 once
   * finished; then `out` holds the completion (status, peer at fault) and
   * the request is freed. */
  hvd_status (*native_test)(hvd_p2p* p, hvd_request* req, int32_t* done,
                            hvd_completion* out);
} hvd_p2p_api;

/* ---- one collective ---------------------------------------------------- */

typedef struct hvd_coll_args {
  size_t struct_size;
  const hvd_extension* ext;
  hvd_collective collective;
  hvd_dtype dtype;
  hvd_reduce_op op; /* allreduce, reducescatter */
  /* Buffers. In place when send == recv. Counts are in elements:
   *  allreduce:     count elements in send and recv;
   *  allgather:     counts[r] elements from rank r, at displs[r] in recv;
   *  broadcast:     count elements in recv on every rank (send unused);
   *  alltoall:      send_counts/send_displs per peer, counts/displs recv;
   *  reducescatter: count elements in send, counts[r] of them land on rank
   *                 r (recv holds counts[rank]) at displs[r] in send. */
  const void* send;
  void* recv;
  size_t count;
  const size_t* counts;
  const size_t* displs;
  const size_t* send_counts;
  const size_t* send_displs;
  int32_t root;     /* broadcast: team rank */
  double prescale;  /* applied before reducing (1.0: none) */
  double postscale; /* applied after (AVERAGE is folded in here) */
  hvd_device device;
  hvd_stream stream;
} hvd_coll_args;

/* ---- scores ------------------------------------------------------------ */

/* "For messages of [min_bytes, max_bytes) on this team, I score `score`."
 * Higher wins; 0 means unsupported. max_bytes == UINT64_MAX: no limit. */
typedef struct hvd_score_range {
  size_t struct_size;
  uint64_t min_bytes;
  uint64_t max_bytes;
  int32_t score;
} hvd_score_range;

typedef struct hvd_reducer_api {
  /* Header: kind == HVD_PLUGIN_REDUCER. */
  size_t struct_size;
  const hvd_extension* ext;
  int32_t kind;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* name;
  const char* version;

  hvd_status (*init)(const hvd_host* host, hvd_reducer** out);
  hvd_status (*finalize)(hvd_reducer* r);
  /* Message of the last failure on this thread; `r` may be NULL. */
  const char* (*last_error)(hvd_reducer* r);

  /* Fill up to *count ranges for this collective, team and memory kind; set
   * *count to the number written (0: not offered at all). Since 1.2 a
   * reducer may also say which ops and dtypes it runs (score_op below). */
  hvd_status (*score)(hvd_reducer* r, hvd_collective coll, const hvd_team* team,
                      hvd_mem_kind mem, hvd_score_range* ranges, size_t* count);

  /* Start a task. `p2p` and `args` (and what they point to) stay valid
   * until task_free. HVD_ERR_UNSUPPORTED: the planner tries the next. */
  hvd_status (*post)(hvd_reducer* r, const hvd_coll_args* args,
                     const hvd_p2p_api* p2p_api, hvd_p2p* p2p, hvd_task** out);
  /* HVD_AGAIN while running; HVD_OK when done; an error otherwise, with the
   * peer at fault in `out`. */
  hvd_status (*progress)(hvd_task* task, hvd_completion* out);
  hvd_status (*task_free)(hvd_task* task);
  /* Idempotent, any thread: the next progress() fails with `reason`. */
  hvd_status (*abort_task)(hvd_task* task, hvd_status reason, int32_t peer);

  /* Since 1.2 (check HVD_HAS_FIELD(api, hvd_reducer_api, score_op); NULL:
   * not offered). score() for one reduce op and dtype: the ranges this
   * reducer offers for `coll` on `dtype` reduced with `op` (for collectives
   * that do not reduce the core passes HVD_OP_SUM, to be ignored). Where it
   * is offered the core asks it instead of score(), and *count = 0 means
   * the reducer does not run that op at all, whatever the rules say. A
   * reducer without it (built for 1.0 or 1.1) is taken to run what score()
   * says for every op but HVD_OP_ADASUM, and never HVD_OP_ADASUM. */
  hvd_status (*score_op)(hvd_reducer* r, hvd_collective coll, hvd_reduce_op op,
                         hvd_dtype dtype, const hvd_team* team,
                         hvd_mem_kind mem, hvd_score_range* ranges,
                         size_t* count);

  /* Since 1.5: HVD_THREADING_* (abi.h), which threads may call the plugin.
   * 0 (HVD_THREADING_BACKGROUND) unless the author opts in. */
  uint32_t threading;
} hvd_reducer_api;

typedef const hvd_reducer_api* (*hvd_reducer_get_api_fn)(uint32_t core_major,
                                                         uint32_t core_minor);
#define HVD_REDUCER_ENTRY "hvd_reducer_get_api"

/* What the plugin defines (declared here so a definition with another
 * signature does not compile). */
HVD_EXPORT const hvd_reducer_api* hvd_reducer_get_api(uint32_t core_major,
                                                      uint32_t core_minor);

#ifdef __cplusplus
}
#endif

#endif /* HOROVOD_REDUCER_H */
