/*
 * Transport plugin ABI, version 1.x.
 *
 * A transport moves bytes between two ranks. The core calls it one call at a
 * time, except abort(), which any thread may call; a transport need not be
 * thread-safe unless it sets HVD_TRANSPORT_THREAD_SAFE. Since 1.4 the calls
 * may come from a thread waiting in hvd_wait as well as from the background
 * thread (docs/abi.md, Threads); for a table built for an earlier minor they
 * come from the background thread only.
 *
 * Everything is non-blocking (NCCL's net plugin model): connect and accept
 * return a connection that is finished by conn_test(); isend/irecv may answer
 * HVD_AGAIN for back-pressure; completion is only ever seen through test().
 *
 * Entry symbol: hvd_transport_get_api (HVD_TRANSPORT_ENTRY).
 */
#ifndef HOROVOD_TRANSPORT_H
#define HOROVOD_TRANSPORT_H

#include "horovod/abi.h"
#include "horovod/host.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bound of a listen handle, the blob exchanged over bootstrap. */
#define HVD_TRANSPORT_HANDLE_MAX 256
/* Upper bound of an exported memory region key. */
#define HVD_TRANSPORT_MR_KEY_MAX 256

typedef struct hvd_transport_s hvd_transport; /* one per process */
typedef struct hvd_listener_s hvd_listener;
typedef struct hvd_conn_s hvd_conn; /* bidirectional, one peer */
typedef struct hvd_request_s hvd_request;
typedef struct hvd_mr_s hvd_mr;               /* local registration */
typedef struct hvd_remote_mr_s hvd_remote_mr; /* a peer's region */

enum {
  HVD_TRANSPORT_THREAD_SAFE = 1u << 0, /* any call from any thread */
  HVD_TRANSPORT_GLOBAL_MR = 1u << 1,   /* one registration serves all conns */
  HVD_TRANSPORT_NEEDS_MR = 1u << 2,    /* isend/irecv need a registration */
  HVD_TRANSPORT_ONE_SIDED = 1u << 3,   /* mem_alloc + iput/iget */
  HVD_TRANSPORT_NEEDS_PROGRESS = 1u << 4, /* call progress() while waiting */
  HVD_TRANSPORT_INTRA_HOST = 1u << 5,     /* reaches only ranks on this host */
  HVD_TRANSPORT_NATIVE_COLLECTIVES = 1u << 6, /* has the collectives ext. */
  /* Since 1.3: runs threads of its own or of its library (progress threads,
   * Gloo's, NCCL's), which would inherit a rank's one-core binding
   * (runtime.bind_to_core). Read only from a table with abi_minor >= 3; one
   * built for an earlier minor is taken to run threads. */
  HVD_TRANSPORT_OWN_THREADS = 1u << 7
};

typedef struct hvd_transport_properties {
  size_t struct_size;
  const hvd_extension* ext;
  uint32_t mem_kinds;         /* HVD_MEM_BIT(kind) it can send from */
  uint32_t flags;             /* HVD_TRANSPORT_* */
  uint32_t tag_bits;          /* usable low bits of a tag (MPI: maybe 15) */
  uint32_t max_requests;      /* requests in flight per connection */
  uint64_t max_message_bytes; /* larger messages are split by the core */
  double bandwidth_gbps;      /* per connection, an estimate */
  double latency_us;          /* one way, small message, an estimate */
  uint32_t handle_bytes;      /* listen handle size, <= HANDLE_MAX */
} hvd_transport_properties;

/* Options of the native-collectives communicator and of conn handshakes. */
typedef struct hvd_conn_info {
  size_t struct_size;
  int32_t self_rank; /* world rank of this process */
  int32_t peer_rank; /* world rank expected at the other end (-1: any) */
  uint64_t epoch;    /* must match at both ends or conn_test fails with
                        HVD_ERR_EPOCH_MISMATCH */
} hvd_conn_info;

typedef struct hvd_transport_api {
  /* Header: kind == HVD_PLUGIN_TRANSPORT. */
  size_t struct_size;
  const hvd_extension* ext; /* e.g. hvd_transport_collectives */
  int32_t kind;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* name;
  const char* version;

  /* Lifecycle. `host` outlives the transport. */
  hvd_status (*init)(const hvd_host* host, hvd_transport** out);
  hvd_status (*finalize)(hvd_transport* t);
  hvd_status (*get_properties)(hvd_transport* t,
                               hvd_transport_properties* props);
  /* The plugin's message for its last failure on this thread ("" if none).
   * `t` may be NULL, e.g. after a failed init. */
  const char* (*last_error)(hvd_transport* t);

  /* Connection set-up. listen() fills `handle` (props.handle_bytes bytes)
   * for the peer to connect to. connect() and accept() return at once:
   * accept() gives HVD_AGAIN while nobody is connecting; both hand back a
   * connection that conn_test() finishes (HVD_AGAIN until the handshake is
   * done, then HVD_OK; the peer's world rank is in conn_peer()). */
  hvd_status (*listen)(hvd_transport* t, void* handle, hvd_listener** out);
  hvd_status (*accept)(hvd_listener* l, const hvd_conn_info* info,
                       hvd_conn** out);
  hvd_status (*connect)(hvd_transport* t, const void* handle,
                        const hvd_conn_info* info, hvd_conn** out);
  hvd_status (*conn_test)(hvd_conn* c);
  int32_t (*conn_peer)(hvd_conn* c);
  hvd_status (*conn_close)(hvd_conn* c);
  hvd_status (*listener_close)(hvd_listener* l);

  /* Memory registration. Transports that need none return a dummy. */
  hvd_status (*mr_reg)(hvd_transport* t, void* buf, size_t bytes,
                       hvd_device device, hvd_mr** out);
  hvd_status (*mr_dereg)(hvd_transport* t, hvd_mr* mr);

  /* Two-sided data. `tag` is matched exactly within the connection; only its
   * low props.tag_bits bits are significant. `mr` may be NULL unless
   * HVD_TRANSPORT_NEEDS_MR. HVD_AGAIN: back-pressure, *req untouched. A
   * receive larger than the message completes with the bytes received; a
   * message larger than the receive fails with HVD_ERR_TRUNCATED. */
  hvd_status (*isend)(hvd_conn* c, const void* buf, size_t bytes, uint64_t tag,
                      hvd_mr* mr, hvd_request** req);
  hvd_status (*irecv)(hvd_conn* c, void* buf, size_t bytes, uint64_t tag,
                      hvd_mr* mr, hvd_request** req);
  /* *done = 1 once finished; then `out` holds the completion and the request
   * is freed. A failed transfer completes with the peer rank at fault. */
  hvd_status (*test)(hvd_request* req, int32_t* done, hvd_completion* out);

  /* Optional. Drives manual-progress transports. */
  hvd_status (*progress)(hvd_transport* t);
  /* Optional. A file descriptor that becomes readable when test() or
   * progress() may make progress, so the core can sleep on it; -1 if none.
   * Level-triggered; the core never reads from it itself. */
  int (*wait_fd)(hvd_transport* t);
  /* Optional. Re-arm the wait fd before the core sleeps on it: HVD_OK when
   * it is safe to sleep, HVD_AGAIN when work is already pending. */
  hvd_status (*wait_arm)(hvd_transport* t);

  /* Idempotent, callable from any thread: every pending request on every
   * connection completes with `reason` (e.g. HVD_ERR_PEER_FAILED) and
   * `peer`; later calls fail the same way. */
  hvd_status (*abort)(hvd_transport* t, hvd_status reason, int32_t peer);

  /* Optional one-sided memory (HVD_TRANSPORT_ONE_SIDED): mem_alloc places
   * memory a peer can reach and registers it; mr_export keys mr_import.
   * mem_alloc / mem_free are called for the [transport] gpu transport
   * only, for the core's device fusion buffers (NULL: the core allocates
   * them itself); the rest (mr_export to iget) is NOT CALLED by this 1.x
   * core and planned to move to an extension in 2.0 (docs/abi.md,
   * "Planned for 2.0"). */
  hvd_status (*mem_alloc)(hvd_transport* t, size_t bytes, hvd_device device,
                          void** ptr, hvd_mr** mr);
  hvd_status (*mem_free)(hvd_transport* t, void* ptr, hvd_mr* mr);
  hvd_status (*mr_export)(hvd_transport* t, hvd_mr* mr, void* key,
                          size_t* key_bytes);
  hvd_status (*mr_import)(hvd_conn* c, const void* key, size_t key_bytes,
                          hvd_remote_mr** out);
  hvd_status (*mr_release)(hvd_conn* c, hvd_remote_mr* rmr);
  /* A pointer this process can load from and store to, when the peer's
   * region is mapped here (shm); NULL otherwise. */
  void* (*remote_ptr)(hvd_remote_mr* rmr);
  hvd_status (*iput)(hvd_conn* c, const void* src, hvd_mr* src_mr,
                     hvd_remote_mr* dst, uint64_t dst_offset, size_t bytes,
                     hvd_request** req);
  hvd_status (*iget)(hvd_conn* c, void* dst, hvd_mr* dst_mr, hvd_remote_mr* src,
                     uint64_t src_offset, size_t bytes, hvd_request** req);

  /* Since 1.5: HVD_THREADING_* (abi.h), which threads may call the plugin.
   * 0 (HVD_THREADING_BACKGROUND) unless the author opts in. */
  uint32_t threading;
} hvd_transport_api;

/* ---- native collectives (extension HVD_EXT_TRANSPORT_COLLECTIVES) ------
 *
 * How the core uses them (docs/abi.md, "Native collectives"): a reducer asks
 * hvd_p2p_api.native() for the transport serving its team; the core calls
 * comm_create once per team (same members, same order on every member; the
 * first call may come long after init), keeps the communicator until it
 * shuts down (comm_destroy before finalize) and calls comm_abort from any
 * thread when the job fails. The reducer checks supports() before posting,
 * passes SUM for AVERAGE and applies prescale / postscale itself, and
 * drives each request through hvd_p2p_api.native_test(), which lands in
 * this transport's test(). A collective that cannot finish (a dead or stuck
 * member) must complete with an error within the transport's own bound,
 * never hang; `peer` names the member at fault when it is known.
 * reducescatter: `send` holds the sum of recv_counts elements, the blocks
 * of the ranks in team order; `recv` holds recv_counts[rank]. */

typedef struct hvd_coll_comm_s hvd_coll_comm;

typedef struct hvd_transport_collectives {
  size_t struct_size;
  int32_t type; /* HVD_EXT_TRANSPORT_COLLECTIVES */
  const hvd_extension* next;

  /* Collective over the team's members, using bootstrap through the host
   * table to exchange what it needs. May return HVD_AGAIN; call again with
   * the same arguments until HVD_OK. */
  hvd_status (*comm_create)(hvd_transport* t, const hvd_team* team,
                            hvd_coll_comm** out);
  hvd_status (*comm_destroy)(hvd_coll_comm* comm);
  /* Whether this combination runs natively (1) or not (0). */
  int32_t (*supports)(hvd_coll_comm* comm, hvd_collective coll, hvd_dtype dtype,
                      hvd_reduce_op op, hvd_mem_kind mem);

  /* All non-blocking: completion through the transport's test(). `stream`
   * orders GPU work (NULL for host memory). Counts are in elements; arrays
   * are indexed by team rank. In place when send == recv. */
  hvd_status (*allreduce)(hvd_coll_comm* comm, const void* send, void* recv,
                          size_t count, hvd_dtype dtype, hvd_reduce_op op,
                          hvd_stream stream, hvd_request** req);
  hvd_status (*allgatherv)(hvd_coll_comm* comm, const void* send,
                           size_t send_count, void* recv,
                           const size_t* recv_counts, const size_t* recv_displs,
                           hvd_dtype dtype, hvd_stream stream,
                           hvd_request** req);
  hvd_status (*broadcast)(hvd_coll_comm* comm, void* buf, size_t count,
                          hvd_dtype dtype, int32_t root, hvd_stream stream,
                          hvd_request** req);
  hvd_status (*reducescatter)(hvd_coll_comm* comm, const void* send, void* recv,
                              const size_t* recv_counts, hvd_dtype dtype,
                              hvd_reduce_op op, hvd_stream stream,
                              hvd_request** req);
  hvd_status (*alltoallv)(hvd_coll_comm* comm, const void* send,
                          const size_t* send_counts, const size_t* send_displs,
                          void* recv, const size_t* recv_counts,
                          const size_t* recv_displs, hvd_dtype dtype,
                          hvd_stream stream, hvd_request** req);
  hvd_status (*barrier)(hvd_coll_comm* comm, hvd_request** req);
  /* Idempotent, any thread. */
  hvd_status (*comm_abort)(hvd_coll_comm* comm, hvd_status reason,
                           int32_t peer);
} hvd_transport_collectives;

/* The one entry symbol. Returns the plugin's table, whose abi_major the core
 * checks against its own before any other call (a plugin built for another
 * major is reported with both versions). NULL: the plugin declines this
 * core outright. */
typedef const hvd_transport_api* (*hvd_transport_get_api_fn)(
    uint32_t core_major, uint32_t core_minor);
#define HVD_TRANSPORT_ENTRY "hvd_transport_get_api"

/* What the plugin defines (declared here so a definition with another
 * signature does not compile). */
HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(uint32_t core_major,
                                                          uint32_t core_minor);

#ifdef __cplusplus
}
#endif

#endif /* HOROVOD_TRANSPORT_H */
