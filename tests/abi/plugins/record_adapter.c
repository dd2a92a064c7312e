/*
 * An adapter table built against the frozen 1.0 headers. allocate_output
 * hands out memory from a caller-owned arena (adapter_ctx); done() records
 * the status and message in the op context.
 */
#include <stdio.h>
#include <string.h>

#include "horovod/adapter.h"

typedef struct arena {
  unsigned char* data;
  size_t capacity, used;
} arena;

typedef struct op_record {
  hvd_status status;
  char message[128];
  int done_calls;
} op_record;

static hvd_status rec_allocate_output(void* adapter_ctx, void* op_ctx,
                                      int32_t index, const hvd_tensor* like,
                                      int32_t ndim, const int64_t* shape,
                                      hvd_tensor* out) {
  arena* a = (arena*)adapter_ctx;
  size_t elements = 1, bytes;
  int32_t i;
  (void)op_ctx, (void)index;
  for (i = 0; i < ndim; ++i) elements *= (size_t)shape[i];
  bytes = elements * like->dtype.bits / 8;
  if (a->used + bytes > a->capacity) return HVD_ERR_OUT_OF_MEMORY;
  *out = *like;
  out->data = a->data + a->used;
  out->ndim = ndim;
  out->shape = shape;
  out->strides = NULL;
  out->byte_offset = 0;
  a->used += bytes;
  return HVD_OK;
}

static void rec_done(void* adapter_ctx, void* op_ctx, hvd_status status,
                     const char* message) {
  op_record* r = (op_record*)op_ctx;
  (void)adapter_ctx;
  r->status = status;
  snprintf(r->message, sizeof r->message, "%s", message ? message : "");
  ++r->done_calls;
}

HVD_EXPORT const hvd_adapter_api* hvd_adapter_get_api(uint32_t major,
                                                      uint32_t minor);

HVD_EXPORT const hvd_adapter_api* hvd_adapter_get_api(uint32_t major,
                                                      uint32_t minor) {
  static hvd_adapter_api api;
  (void)minor;
  if (major != HVD_ABI_VERSION_MAJOR) return NULL;
  memset(&api, 0, sizeof api);
  api.struct_size = sizeof api;
  api.kind = HVD_PLUGIN_ADAPTER;
  api.abi_major = HVD_ABI_VERSION_MAJOR;
  api.abi_minor = HVD_ABI_VERSION_MINOR;
  api.name = "record";
  api.version = "1.0-frozen";
  api.allocate_output = rec_allocate_output;
  api.done = rec_done;
  return &api;
}
