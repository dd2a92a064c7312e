/*
 * Host services: what the core gives every plugin at init.
 *
 * The core owns this table and everything it points to; a plugin keeps the
 * pointer until its finalize. Every function takes the table's `ctx` first.
 * All functions are thread-safe unless stated otherwise.
 */
#ifndef HOROVOD_HOST_H
#define HOROVOD_HOST_H

#include "horovod/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- configuration: the plugin's own TOML table as named values -------- */

typedef int32_t hvd_value_type;
enum {
  HVD_VALUE_BOOL = 0,
  HVD_VALUE_INT = 1,
  HVD_VALUE_FLOAT = 2,
  HVD_VALUE_STRING = 3, /* also sizes ("64MiB") and durations ("5s") */
  HVD_VALUE_ARRAY = 4
};

typedef struct hvd_config_value {
  size_t struct_size;
  const char* key; /* dotted path inside the plugin's table */
  hvd_value_type type;
  int32_t bool_value;
  int64_t int_value;
  double float_value;
  const char* string_value;
  const struct hvd_config_value* items; /* HVD_VALUE_ARRAY elements */
  size_t item_count;
  const char* source; /* "file:line:column", "HOROVOD_X" or "default" */
} hvd_config_value;

/* The table `[transport.<name>]`, `[reducer.<name>]` or `[adapter.<name>]`
 * for this plugin, flattened; empty when the file has none. */
typedef struct hvd_config_table {
  size_t struct_size;
  const char* name; /* e.g. "transport.ofi" */
  const hvd_config_value* values;
  size_t count;
} hvd_config_table;

/* ---- the world --------------------------------------------------------- */

typedef struct hvd_world {
  size_t struct_size;
  int32_t rank;
  int32_t size;
  int32_t local_rank;
  int32_t local_size;
  int32_t cross_rank; /* index of this host among the job's hosts */
  int32_t cross_size; /* number of hosts */
  uint64_t epoch;
  const char* hostname;
} hvd_world;

/* ---- the device layer -------------------------------------------------- */

/* Streams, events, copies and reduction kernels, per memory kind. The core
 * loads CUDA on demand, so this works (host memory only) where no driver
 * exists. On host memory a NULL stream means "now, on this thread". */
typedef struct hvd_device_api {
  size_t struct_size;
  const hvd_extension* ext;
  void* ctx;

  /* Number of devices of `kind` usable here (1 for host). */
  int32_t (*device_count)(void* ctx, hvd_mem_kind kind);

  hvd_status (*stream_create)(void* ctx, hvd_device device, hvd_stream* out);
  hvd_status (*stream_destroy)(void* ctx, hvd_stream stream);
  hvd_status (*stream_synchronize)(void* ctx, hvd_stream stream);
  hvd_status (*stream_wait_event)(void* ctx, hvd_stream stream,
                                  hvd_event event);

  hvd_status (*event_create)(void* ctx, hvd_device device, hvd_event* out);
  hvd_status (*event_destroy)(void* ctx, hvd_event event);
  hvd_status (*event_record)(void* ctx, hvd_event event, hvd_stream stream);
  /* HVD_OK when the event has completed, HVD_AGAIN when not yet. */
  hvd_status (*event_query)(void* ctx, hvd_event event);

  hvd_status (*mem_alloc)(void* ctx, hvd_device device, size_t bytes,
                          void** out);
  hvd_status (*mem_free)(void* ctx, hvd_device device, void* ptr);
  hvd_status (*memcpy_async)(void* ctx, void* dst, hvd_device dst_device,
                             const void* src, hvd_device src_device,
                             size_t bytes, hvd_stream stream);

  /* dst[i] = a[i] op b[i] for i < count. dst may alias a or b. `op` is one of
   * SUM, MIN, MAX, PRODUCT (AVERAGE is SUM then scale). */
  hvd_status (*reduce)(void* ctx, hvd_device device, hvd_dtype dtype,
                       hvd_reduce_op op, void* dst, const void* a,
                       const void* b, size_t count, hvd_stream stream);
  /* buf[i] *= factor, computed in at least float precision. */
  hvd_status (*scale)(void* ctx, hvd_device device, hvd_dtype dtype, void* buf,
                      size_t count, double factor, hvd_stream stream);

  /* Since 1.1 (check HVD_HAS_FIELD). The device's own handle behind
   * `stream`: the cudaStream_t of a CUDA stream, so a plugin that drives a
   * vendor library (NCCL) orders its work on the stream it was given. NULL
   * for a NULL stream and for host streams. */
  void* (*stream_native)(void* ctx, hvd_stream stream);
} hvd_device_api;

/* ---- the host table ---------------------------------------------------- */

typedef struct hvd_host {
  size_t struct_size;
  const hvd_extension* ext;
  void* ctx;
  uint32_t abi_major; /* the core's ABI version */
  uint32_t abi_minor;

  /* Logging. The core prefixes the plugin's name and the rank. */
  int32_t (*log_enabled)(void* ctx, hvd_log_level level);
  void (*log)(void* ctx, hvd_log_level level, const char* message);

  /* Configuration. */
  const hvd_config_table* config;
  /* Report a bad value in the plugin's table; the core formats the error
   * with file, line, column and key, and returns HVD_ERR_CONFIG for the
   * plugin to pass back. `key` may name an unknown key. */
  hvd_status (*config_error)(void* ctx, const char* key, const char* message);

  const hvd_world* world;

  /* Bootstrap: a small authenticated key-value store shared by the job. Keys
   * are namespaced per plugin by the core. get blocks up to timeout_ms for
   * the key to appear; on entry *len is the buffer size, on return the value
   * size (HVD_ERR_TRUNCATED when the buffer was too small). */
  hvd_status (*bootstrap_put)(void* ctx, const char* key, const void* value,
                              size_t len);
  hvd_status (*bootstrap_get)(void* ctx, int32_t rank, const char* key,
                              void* value, size_t* len, int64_t timeout_ms);
  /* Every rank passes `len` bytes; `all` receives size * len bytes in rank
   * order. Collective over the world. */
  hvd_status (*bootstrap_allgather)(void* ctx, const void* mine, size_t len,
                                    void* all);
  hvd_status (*bootstrap_barrier)(void* ctx);

  /* Host memory with the given alignment (a power of two). */
  void* (*mem_alloc)(void* ctx, size_t bytes, size_t alignment);
  void (*mem_free)(void* ctx, void* ptr);

  const hvd_device_api* device;

  /* Timeline: a span on the row of `row` (a tensor or response name); NULL
   * or "" from a reducer's post or progress puts it on the rows of the
   * tensors that task is running (e.g. "REDUCE_SCATTER", "ALLGATHER" for
   * the steps of an allreduce). Spans nest: end closes the innermost one.
   * Cheap when the timeline is off. */
  void (*timeline_begin)(void* ctx, const char* row, const char* phase);
  void (*timeline_end)(void* ctx, const char* row, const char* phase);
} hvd_host;

#ifdef __cplusplus
}
#endif

#endif /* HOROVOD_HOST_H */
