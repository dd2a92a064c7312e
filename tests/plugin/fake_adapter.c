/*
 * An adapter table for the loader's tests:
 *   FAKE_MISSING=field   that function pointer is NULL
 */
#include <string.h>

#include "horovod/adapter.h"

static hvd_status fake_allocate_output(void* adapter_ctx, void* op_ctx,
                                       int32_t index, const hvd_tensor* like,
                                       int32_t ndim, const int64_t* shape,
                                       hvd_tensor* out) {
  (void)adapter_ctx, (void)op_ctx, (void)index, (void)like, (void)ndim,
      (void)shape, (void)out;
  return HVD_ERR_UNSUPPORTED;
}
static void fake_done(void* adapter_ctx, void* op_ctx, hvd_status status,
                      const char* message) {
  (void)adapter_ctx, (void)op_ctx, (void)status, (void)message;
}

HVD_EXPORT const hvd_adapter_api* hvd_adapter_get_api(uint32_t major,
                                                      uint32_t minor) {
  static hvd_adapter_api api;
  (void)major, (void)minor;
  memset(&api, 0, sizeof api);
  api.struct_size = sizeof api;
  api.kind = HVD_PLUGIN_ADAPTER;
  api.abi_major = HVD_ABI_VERSION_MAJOR;
  api.abi_minor = HVD_ABI_VERSION_MINOR;
  api.name = "fake";
  api.version = "0.0.1";
  api.allocate_output = fake_allocate_output;
  api.done = fake_done;
#ifdef FAKE_MISSING
  api.FAKE_MISSING = NULL;
#endif
  return &api;
}
