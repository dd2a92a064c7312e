/*
 * The public C API of the Horovod runtime. Thread-safe; a process forked
 * from an initialised one (e.g. a data-loader worker) sees the runtime as
 * not initialised.
 *
 * Failing calls return a status and leave a message for the calling thread
 * in hvd_last_error().
 */
#ifndef HOROVOD_HOROVOD_H
#define HOROVOD_HOROVOD_H

#include "horovod/abi.h"
#include "horovod/adapter.h"
#include "horovod/host.h"
#include "horovod/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hvd_handle_s hvd_handle;

typedef struct hvd_init_options {
  size_t struct_size;
  const hvd_extension* ext;
  /* horovod.toml to read; NULL: HOROVOD_CONFIG, ./horovod.toml, the user
   * config directory, /etc/horovod/horovod.toml, built-in defaults. */
  const char* config_path;
  /* Static process sets: process_set_count lists of world ranks. Set i gets
   * id i + 1 (0 is the global set). */
  const int32_t* const* process_sets;
  const int32_t* process_set_sizes;
  int32_t process_set_count;
} hvd_init_options;

/* opts may be NULL. Initialising twice is an error; init after shutdown
 * starts a new runtime. */
HVD_EXPORT hvd_status hvd_init(const hvd_init_options* opts);
/* Fails every pending op with HVD_ERR_SHUT_DOWN, then stops. As in Horovod,
 * a shutdown on one rank stops the runtime on every rank (their pending ops
 * fail the same way, naming the rank): run a barrier first when other ranks
 * may still have work. Must not be called from a done callback. */
HVD_EXPORT hvd_status hvd_shutdown(void);
HVD_EXPORT int32_t hvd_is_initialized(void);

/* -1 when not initialised. */
HVD_EXPORT int32_t hvd_rank(void);
HVD_EXPORT int32_t hvd_size(void);
HVD_EXPORT int32_t hvd_local_rank(void);
HVD_EXPORT int32_t hvd_local_size(void);
HVD_EXPORT int32_t hvd_cross_rank(void);
HVD_EXPORT int32_t hvd_cross_size(void);

/* The calling thread's message for its last failed call ("" if none). */
HVD_EXPORT const char* hvd_last_error(void);
HVD_EXPORT const char* hvd_status_string(hvd_status status);

/* Called once when the op ends, from the thread that runs the cycle: the
 * background thread, or a thread waiting in hvd_wait (which drives the
 * cycle itself while it spins, runtime.spin_time). Must not block, nor wait
 * on a lock that a thread calling hvd_wait may hold. `message` is valid
 * only during the call. */
typedef void (*hvd_done_fn)(void* user, hvd_status status, const char* message);

/* One collective. Tensors (tensor.h) may be of any dtype in abi.h, with
 * 64-bit element counts (2^31 and more are fine); they must be compact
 * row-major: a tensor with other strides is rejected by hvd_enqueue with
 * HVD_ERR_INVALID_ARGUMENT naming the op and the tensor (make it contiguous
 * first). Host memory, and CUDA memory where hvd_accepts_memory says so.
 * Ranks that disagree about an op of the same name (collective, dtype,
 * shape, op, scale factors, root, grouping) fail it on every rank with
 * HVD_ERR_MISMATCH and a message naming the tensor, the ranks and the
 * disagreement. */
typedef struct hvd_op {
  size_t struct_size;
  const hvd_extension* ext;
  hvd_collective collective;
  /* Matched across ranks; unique among this process set's ops in flight.
   * Grouped ops (tensor_count > 1; allreduce, allgather, reducescatter) are
   * negotiated and fused as a unit. Barrier and join take no tensors and
   * may have no name (they are then matched by their order). While a rank
   * has joined, the others' allreduces run with it contributing zeros; join
   * completes once every rank has joined, and hvd_handle_output(0) is an
   * int32 tensor of one element: the last rank to join. */
  const char* name;
  int32_t process_set; /* 0: global */
  int32_t tensor_count;
  const hvd_tensor* inputs;
  /* allreduce, broadcast, reducescatter: caller-provided outputs (NULL: in
   * place for allreduce and broadcast). A reducescatter's output holds this
   * rank's rows of the first dimension: rows / size each, one more on the
   * first rows % size ranks. allgather (first dimensions may differ between
   * ranks) and alltoall: NULL, and the output is allocated through the
   * adapter, or by the core and read with hvd_handle_output(). */
  const hvd_tensor* outputs;
  hvd_reduce_op op;
  double prescale; /* 0 is read as 1 */
  double postscale;
  int32_t root; /* broadcast: rank in the process set */
  /* alltoall: first-dimension rows to send to each rank (split_count ==
   * process set size); NULL: equal split. */
  const int32_t* splits;
  int32_t split_count;
  /* GPU ordering: the core waits for ready_event, then works on `stream`. */
  hvd_stream stream;
  hvd_event ready_event;
  hvd_done_fn done;
  void* user;
  hvd_adapter* adapter; /* NULL: no framework binding */
  void* adapter_op;
} hvd_op;

/* Fails at once, with no handle and no callback, for an invalid op, a name
 * already in flight in its process set, or a runtime that has stopped
 * (shut down, or a failed rank: the message names it). Otherwise every
 * path ends in the done callback and the handle's status. */
HVD_EXPORT hvd_status hvd_enqueue(const hvd_op* op, hvd_handle** out);
/* *done = 1 when finished (successfully or not). */
HVD_EXPORT hvd_status hvd_poll(hvd_handle* handle, int32_t* done);
/* The op's status once done; HVD_ERR_TIMEOUT if still running after
 * timeout_ms (< 0: no limit). For up to runtime.spin_time the calling
 * thread runs the background thread's work itself, where that thread is
 * idle (completion callbacks may then run on it), then sleeps. */
HVD_EXPORT hvd_status hvd_wait(hvd_handle* handle, int64_t timeout_ms);
/* The op's failure message ("" on success); valid until release. */
HVD_EXPORT const char* hvd_handle_message(hvd_handle* handle);
/* An output whose shape was negotiated (allgather, alltoall, join) once the
 * op succeeded: core-allocated memory lives until release; with an adapter
 * this describes the memory the adapter allocated. */
HVD_EXPORT hvd_status hvd_handle_output(hvd_handle* handle, int32_t index,
                                        hvd_tensor* out);
/* alltoall: the rows received from each rank. */
HVD_EXPORT hvd_status hvd_handle_received_splits(hvd_handle* handle,
                                                 const int32_t** splits,
                                                 int32_t* count);
HVD_EXPORT void hvd_release(hvd_handle* handle);

/* Dynamic process sets (when [runtime] dynamic_process_sets is on;
 * otherwise HVD_ERR_UNSUPPORTED). Collective over the world: every rank
 * calls them in the same order with the same arguments (ranks that
 * disagree fail with HVD_ERR_MISMATCH). A new set gets the next unused id
 * (ids are never reused) and negotiates, fuses and orders its ops on its
 * own. Removing a set (not 0) fails its ops still in negotiation with
 * HVD_ERR_ABORTED; ops already negotiated complete.
 *
 * The hvd_enqueue_ forms start the change and return at once with a handle
 * (for hvd_poll, hvd_wait, hvd_handle_message, hvd_release), as
 * hvd_enqueue does, and may be called from any thread: a caller waits in
 * slices of its own (to stay interruptible) or not at all. The handle
 * finishes with the change; then hvd_handle_output(0) is an int32 tensor
 * of one element, the set's id (the new one, or the one removed). Arguments
 * that are wrong on every rank (a rank outside the world, a set that does
 * not exist) fail the change through its handle, on every rank alike. A
 * change still in flight when the caller gives up stays in flight: the
 * ranks' later changes are matched by their order, this one included. The
 * other two wait for the change, and must not be called from a done
 * callback. Messages about a change name the call
 * ("hvd_remove_process_set 'hvd.process_set.remove.0': ..."). */
HVD_EXPORT hvd_status hvd_enqueue_add_process_set(const int32_t* ranks,
                                                  int32_t count,
                                                  hvd_handle** out);
HVD_EXPORT hvd_status hvd_enqueue_remove_process_set(int32_t id,
                                                     hvd_handle** out);
HVD_EXPORT hvd_status hvd_add_process_set(const int32_t* ranks, int32_t count,
                                          int32_t* id);
HVD_EXPORT hvd_status hvd_remove_process_set(int32_t id);

/* Timeline: a Chrome trace (chrome://tracing, Perfetto) of every tensor's
 * negotiation, queue wait, fusion-buffer copies and reducer steps, one row
 * per tensor. Rank 0 writes it, as Horovod's does; other ranks accept the
 * calls and write nothing. hvd_start_timeline replaces a trace in progress;
 * it fails for an empty path or a file that cannot be opened (the message
 * names it). mark_cycles != 0 marks every negotiation cycle. Works whether
 * [timeline] path is set, "DYNAMIC" or empty. hvd_stop_timeline writes out
 * and closes the file (nothing when no trace runs); hvd_shutdown does too.
 */
HVD_EXPORT hvd_status hvd_start_timeline(const char* path, int32_t mark_cycles);
HVD_EXPORT hvd_status hvd_stop_timeline(void);

/* 1 when every host runs the same number of ranks, 0 when not, -1 when not
 * initialised. */
HVD_EXPORT int32_t hvd_is_homogeneous(void);

/* This process's rank in process set `id` (-1 when it is not a member) and
 * the set's size, e.g. for a binding that allocates a reducescatter's
 * output. HVD_ERR_NOT_FOUND for an id no set has (never added, or
 * removed); HVD_ERR_SHUT_DOWN when not initialised. */
HVD_EXPORT hvd_status hvd_process_set_rank(int32_t id, int32_t* rank,
                                           int32_t* size);

/* 1 when hvd_enqueue takes tensors in memory of `kind` (hvd_mem_kind) on
 * device `device_id` in this process, else 0: host device 0 always; a CUDA
 * device when the CUDA runtime, a driver and that device are present. The
 * core moves such tensors directly or stages them through host memory (it
 * logs which). Needs no hvd_init. */
HVD_EXPORT int32_t hvd_accepts_memory(int32_t kind, int32_t device_id);

/* The core's device layer (host.h): what a caller creates the streams and
 * events of hvd_op with, and waits on. A stream created on host device 0
 * is the fake device: host memory with stream and event semantics (a
 * worker thread per stream), on which hvd_op takes the device path that
 * CUDA tensors take, so its ordering runs without a GPU. Needs no
 * hvd_init; valid for the life of the process. */
HVD_EXPORT const hvd_device_api* hvd_device_layer(void);

#ifdef __cplusplus
}
#endif

#endif /* HOROVOD_HOROVOD_H */
