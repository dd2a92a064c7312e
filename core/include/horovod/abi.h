/*
 * Shared rules of the Horovod plugin ABI, version 1.x.
 *
 * Every plugin kind (transport, reducer, adapter) is a table of C function
 * pointers returned by one entry symbol. The rules that keep a plugin built
 * today loading into every later 1.x core are stated here and in docs/abi.md:
 *
 *  - Every table and every argument struct starts with `struct_size` and an
 *    extension pointer. Fields are only ever appended. Whoever reads a struct
 *    checks `struct_size` (HVD_HAS_FIELD) before touching a field that a
 *    later minor version added.
 *  - A NULL function pointer means "not supported".
 *  - The major version must match exactly; the minor version says which
 *    appended fields exist.
 *  - Functions return an hvd_status, never throw, never exit.
 *  - Strings are UTF-8, NUL-terminated, owned by whoever passed them and valid
 *    for the duration of the call unless documented otherwise.
 */
#ifndef HOROVOD_ABI_H
#define HOROVOD_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HVD_ABI_VERSION_MAJOR 1
#define HVD_ABI_VERSION_MINOR 5

#if defined(__GNUC__)
#define HVD_EXPORT __attribute__((visibility("default")))
#else
#define HVD_EXPORT
#endif

/* Size of a struct up to and including `last_field`: what a producer built
 * against this header puts in `struct_size`. */
#define HVD_STRUCT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

/* Whether the struct behind `ptr` (whose producer may be older) holds
 * `field`. */
#define HVD_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= HVD_STRUCT_SIZE(type, field))

/* ---- status codes ------------------------------------------------------ */

typedef int32_t hvd_status;

enum {
  HVD_OK = 0,
  /* Not done yet, or back-pressure: call again later. Never an error. */
  HVD_AGAIN = 1,

  HVD_ERR_UNSUPPORTED = -1,      /* not implemented here: fall through */
  HVD_ERR_INVALID_ARGUMENT = -2, /* caller's mistake; last_error says which */
  HVD_ERR_OUT_OF_MEMORY = -3,
  HVD_ERR_PEER_FAILED = -4, /* the completion's `peer` names the rank */
  HVD_ERR_TIMEOUT = -5,
  HVD_ERR_ABORTED = -6,        /* abort() was called */
  HVD_ERR_EPOCH_MISMATCH = -7, /* traffic from another world epoch */
  HVD_ERR_MISMATCH = -8,       /* ranks disagree (shape, dtype, op, ...) */
  HVD_ERR_VERSION = -9,        /* incompatible ABI version */
  HVD_ERR_CONFIG = -10,        /* bad configuration value */
  HVD_ERR_SYSTEM = -11,        /* an OS or library call failed */
  HVD_ERR_INTERNAL = -12,      /* a bug: please report */
  HVD_ERR_TRUNCATED = -13,     /* message larger than the receive buffer */
  HVD_ERR_NOT_FOUND = -14,
  HVD_ERR_SHUT_DOWN = -15 /* the runtime is not (or no longer) up */
};

/* ---- extension chain --------------------------------------------------- */

/* Optional capabilities hang off a table as a singly linked chain, found by
 * `type` (PJRT's model). Unknown types are skipped. Types below 0x10000 are
 * the project's; vendors use 0x10000 and above. */
typedef struct hvd_extension {
  size_t struct_size;
  int32_t type;
  const struct hvd_extension* next;
} hvd_extension;

enum {
  HVD_EXT_TRANSPORT_COLLECTIVES = 1, /* hvd_transport_collectives */
  HVD_EXT_PLUGIN_INFO = 2,           /* hvd_plugin_info (since 1.1) */
  HVD_EXT_VENDOR_BASE = 0x10000
};

/* Optional on the ext chain of any plugin table (since 1.1): what the
 * plugin sees of its library and fabric, for horovod-info ("Open MPI
 * v4.1.4", "UCX 1.13.1; transports: tcp, sm, self", "no CUDA device").
 * describe() needs no instance and must not call into the core; any thread
 * may call it, any number of times, before or without init. It returns a
 * short UTF-8 text of one or a few lines without a trailing newline, never
 * NULL, in storage the plugin keeps until it is unloaded. */
typedef struct hvd_plugin_info {
  size_t struct_size;
  int32_t type; /* HVD_EXT_PLUGIN_INFO */
  const struct hvd_extension* next;
  const char* (*describe)(void);
} hvd_plugin_info;

/* ---- plugin identity --------------------------------------------------- */

enum {
  HVD_PLUGIN_TRANSPORT = 1,
  HVD_PLUGIN_REDUCER = 2,
  HVD_PLUGIN_ADAPTER = 3
};

/* Which threads may call a plugin: the `threading` field at the end of every
 * plugin table (transport, reducer, adapter), since 1.5. A table that
 * leaves it 0 is called from the core's background thread only. */
enum {
  HVD_THREADING_BACKGROUND = 0, /* the background thread only */
  /* Also a thread waiting in hvd_wait, which then runs the background
   * thread's work in its place: calls are serialized, with the memory
   * ordering of a lock, but thread-local state does not carry from one
   * call to the next (UCX: UCS_THREAD_MODE_SERIALIZED; MPI:
   * MPI_THREAD_SERIALIZED). Opt in by setting it; nothing implies it. */
  HVD_THREADING_SERIALIZED = 1
};

/* The first fields of every plugin table, in this order. */
typedef struct hvd_plugin_header {
  size_t struct_size;
  const hvd_extension* ext;
  int32_t kind;       /* HVD_PLUGIN_* */
  uint32_t abi_major; /* HVD_ABI_VERSION_MAJOR the plugin was built with */
  uint32_t abi_minor;
  const char* name;    /* e.g. "shm", "ring" */
  const char* version; /* the plugin's own version string, free form */
} hvd_plugin_header;

/* ---- data types and operations ----------------------------------------- */

typedef int32_t hvd_dtype;
enum {
  HVD_UINT8 = 0,
  HVD_INT8 = 1,
  HVD_UINT16 = 2,
  HVD_INT16 = 3,
  HVD_INT32 = 4,
  HVD_INT64 = 5,
  HVD_FLOAT16 = 6,
  HVD_BFLOAT16 = 7,
  HVD_FLOAT32 = 8,
  HVD_FLOAT64 = 9,
  HVD_BOOL = 10,
  HVD_DTYPE_COUNT = 11 /* grows with minor versions */
};

typedef int32_t hvd_reduce_op;
enum {
  HVD_OP_SUM = 0,
  HVD_OP_AVERAGE = 1, /* sum, then divide by the team size */
  HVD_OP_MIN = 2,
  HVD_OP_MAX = 3,
  HVD_OP_PRODUCT = 4,
  HVD_OP_ADASUM = 5,
  HVD_OP_COUNT = 6
};

typedef int32_t hvd_collective;
enum {
  HVD_COLL_ALLREDUCE = 0,
  HVD_COLL_ALLGATHER = 1, /* per-rank counts may differ (allgatherv) */
  HVD_COLL_BROADCAST = 2,
  HVD_COLL_ALLTOALL = 3,      /* per-peer counts (alltoallv) */
  HVD_COLL_REDUCESCATTER = 4, /* per-rank counts may differ */
  HVD_COLL_BARRIER = 5,
  HVD_COLL_JOIN = 6, /* runtime only; never reaches a reducer */
  HVD_COLL_COUNT = 7
};

/* ---- memory and devices ------------------------------------------------ */

/* Memory kinds, also used as bit flags (1 << kind) in capability masks. */
typedef int32_t hvd_mem_kind;
enum {
  HVD_MEM_HOST = 0,
  HVD_MEM_CUDA = 1,
  HVD_MEM_DMABUF = 2,
  HVD_MEM_KIND_COUNT = 3
};
#define HVD_MEM_BIT(kind) (1u << (kind))

typedef struct hvd_device {
  hvd_mem_kind kind;
  int32_t id; /* device ordinal; 0 for host */
} hvd_device;

/* Opaque handles of the core's device layer (see host.h). A NULL stream on
 * host memory means "synchronous, on the calling thread". */
typedef struct hvd_stream_s* hvd_stream;
typedef struct hvd_event_s* hvd_event;

/* ---- completion -------------------------------------------------------- */

/* What every asynchronous operation reports when it ends. */
typedef struct hvd_completion {
  size_t struct_size;
  hvd_status status;
  int32_t peer;   /* on failure: the world rank at fault, or -1 if unknown */
  uint64_t bytes; /* bytes transferred (received size for a receive) */
} hvd_completion;

/* ---- logging ----------------------------------------------------------- */

typedef int32_t hvd_log_level;
enum {
  HVD_LOG_TRACE = 0,
  HVD_LOG_DEBUG = 1,
  HVD_LOG_INFO = 2,
  HVD_LOG_WARNING = 3,
  HVD_LOG_ERROR = 4,
  HVD_LOG_FATAL = 5
};

/* ---- teams ------------------------------------------------------------- */

/* A group of ranks a collective runs on: the world, a process set, or a
 * sub-team (e.g. the ranks of one host). Arrays are indexed by team rank and
 * owned by the core; they stay valid while the team exists. */
typedef struct hvd_team {
  size_t struct_size;
  const hvd_extension* ext;
  int32_t rank; /* this process's rank in the team */
  int32_t size;
  const int32_t* world_ranks; /* team rank -> world rank */
  const int32_t* host_of;     /* team rank -> host index in [0, host_count) */
  int32_t host_count;
  int32_t local_rank; /* rank among team members on this host */
  int32_t local_size;
  uint64_t epoch;      /* world epoch; bumps when the job is rebuilt */
  int32_t process_set; /* 0 for the global set */
} hvd_team;

#ifdef __cplusplus
}
#endif

#endif /* HOROVOD_ABI_H */
