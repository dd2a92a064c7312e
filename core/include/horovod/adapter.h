/*
 * Adapter ABI, version 1.x: how a framework binding (PyTorch, TensorFlow)
 * plugs into the one core of the process.
 *
 * A binding is a shared object that links libhorovod and registers its table
 * with hvd_register_adapter(); PyTorch and TensorFlow in one process then
 * share one background thread and one set of connections. It enqueues work
 * through the public API (horovod.h), naming its adapter and a per-op
 * context; the core calls back into the table for what only the framework
 * can do. The core never includes a framework header.
 *
 * Callbacks come one at a time from the thread that runs the core's cycle:
 * its background thread, or since 1.4 a thread waiting in hvd_wait (while
 * an adapter built for an earlier minor is registered, the background
 * thread only). They must not block on a lock a waiting thread may hold, nor
 * on the framework's own work queue.
 *
 * Entry symbol (for horovod-info and vendors' own loaders):
 * hvd_adapter_get_api (HVD_ADAPTER_ENTRY).
 */
#ifndef HOROVOD_ADAPTER_H
#define HOROVOD_ADAPTER_H

#include "horovod/abi.h"
#include "horovod/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hvd_adapter_s hvd_adapter; /* the core's registration */

typedef struct hvd_adapter_api {
  /* Header: kind == HVD_PLUGIN_ADAPTER. */
  size_t struct_size;
  const hvd_extension* ext;
  int32_t kind;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* name; /* "torch", "tensorflow" */
  const char* version;

  /* Allocate output `index` of an op once its shape is known (allgather and
   * alltoall learn it only after negotiation). `like` gives dtype and
   * device. On success *out describes framework-owned memory that stays
   * valid until done() for this op. */
  hvd_status (*allocate_output)(void* adapter_ctx, void* op_ctx, int32_t index,
                                const hvd_tensor* like, int32_t ndim,
                                const int64_t* shape, hvd_tensor* out);

  /* Optional. HVD_OK once the op's inputs are ready to read (the
   * framework's GPU work producing them has finished), HVD_AGAIN before.
   * NULL: always ready (host tensors, or the op carries a ready event). */
  hvd_status (*ready)(void* adapter_ctx, void* op_ctx);

  /* The op ended. `message` explains a failure (names the tensor, the ranks
   * and the disagreement); valid only during the call. After done() the
   * core never touches op_ctx again. */
  void (*done)(void* adapter_ctx, void* op_ctx, hvd_status status,
               const char* message);

  /* Since 1.5: HVD_THREADING_* (abi.h), which threads may call
   * allocate_output, ready and done (and hvd_op.done of its ops). 0
   * (HVD_THREADING_BACKGROUND) unless the author opts in. */
  uint32_t threading;
} hvd_adapter_api;

/* Register a binding with the core. The table and adapter_ctx must outlive
 * the registration. Checks the table as the plugin loader does (major
 * version, struct_size, required functions) and fails with a message in
 * hvd_last_error() naming what is wrong. */
HVD_EXPORT hvd_status hvd_register_adapter(const hvd_adapter_api* api,
                                           void* adapter_ctx,
                                           hvd_adapter** out);
HVD_EXPORT hvd_status hvd_unregister_adapter(hvd_adapter* adapter);

typedef const hvd_adapter_api* (*hvd_adapter_get_api_fn)(uint32_t core_major,
                                                         uint32_t core_minor);
#define HVD_ADAPTER_ENTRY "hvd_adapter_get_api"

/* What the plugin defines (declared here so a definition with another
 * signature does not compile). */
HVD_EXPORT const hvd_adapter_api* hvd_adapter_get_api(uint32_t core_major,
                                                      uint32_t core_minor);

#ifdef __cplusplus
}
#endif

#endif /* HOROVOD_ADAPTER_H */
