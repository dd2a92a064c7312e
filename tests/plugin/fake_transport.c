/*
 * A transport table that is complete but does nothing useful, built once per
 * loader failure with one defect switched on by a compile definition:
 *   FAKE_NO_ENTRY        exports no entry symbol
 *   FAKE_DECLINE         the entry point returns NULL
 *   FAKE_ABI_MAJOR=n     abi_major is n
 *   FAKE_STRUCT_SIZE=n   struct_size is n
 *   FAKE_KIND=k          kind is k
 *   FAKE_MISSING=field   that function pointer is NULL
 *   FAKE_INIT_ERROR="m"  init fails with HVD_ERR_CONFIG and last_error "m"
 *   FAKE_VERSION="v"     the version string
 */
#include <string.h>

#include "horovod/transport.h"

#ifndef FAKE_VERSION
#define FAKE_VERSION "1.2.3-fake"
#endif

static const char* fake_error = "";

static hvd_status fake_init(const hvd_host* host, hvd_transport** out) {
  (void)host;
#ifdef FAKE_INIT_ERROR
  fake_error = FAKE_INIT_ERROR;
  *out = NULL;
  return HVD_ERR_CONFIG;
#else
  static int instance;
  *out = (hvd_transport*)&instance;
  return HVD_OK;
#endif
}
static hvd_status fake_finalize(hvd_transport* t) {
  (void)t;
  return HVD_OK;
}
static hvd_status fake_get_properties(hvd_transport* t,
                                      hvd_transport_properties* props) {
  (void)t;
  memset(props, 0, sizeof *props);
  props->struct_size = sizeof *props;
  return HVD_OK;
}
static const char* fake_last_error(hvd_transport* t) {
  (void)t;
  return fake_error;
}
static hvd_status fake_listen(hvd_transport* t, void* handle,
                              hvd_listener** out) {
  (void)t, (void)handle, (void)out;
  return HVD_ERR_UNSUPPORTED;
}
static hvd_status fake_accept(hvd_listener* l, const hvd_conn_info* info,
                              hvd_conn** out) {
  (void)l, (void)info, (void)out;
  return HVD_ERR_UNSUPPORTED;
}
static hvd_status fake_connect(hvd_transport* t, const void* handle,
                               const hvd_conn_info* info, hvd_conn** out) {
  (void)t, (void)handle, (void)info, (void)out;
  return HVD_ERR_UNSUPPORTED;
}
static hvd_status fake_conn_test(hvd_conn* c) {
  (void)c;
  return HVD_ERR_UNSUPPORTED;
}
static int32_t fake_conn_peer(hvd_conn* c) {
  (void)c;
  return -1;
}
static hvd_status fake_conn_close(hvd_conn* c) {
  (void)c;
  return HVD_OK;
}
static hvd_status fake_listener_close(hvd_listener* l) {
  (void)l;
  return HVD_OK;
}
static hvd_status fake_mr_reg(hvd_transport* t, void* buf, size_t bytes,
                              hvd_device device, hvd_mr** out) {
  (void)t, (void)buf, (void)bytes, (void)device;
  *out = NULL;
  return HVD_OK;
}
static hvd_status fake_mr_dereg(hvd_transport* t, hvd_mr* mr) {
  (void)t, (void)mr;
  return HVD_OK;
}
static hvd_status fake_isend(hvd_conn* c, const void* buf, size_t bytes,
                             uint64_t tag, hvd_mr* mr, hvd_request** req) {
  (void)c, (void)buf, (void)bytes, (void)tag, (void)mr, (void)req;
  return HVD_ERR_UNSUPPORTED;
}
static hvd_status fake_irecv(hvd_conn* c, void* buf, size_t bytes, uint64_t tag,
                             hvd_mr* mr, hvd_request** req) {
  (void)c, (void)buf, (void)bytes, (void)tag, (void)mr, (void)req;
  return HVD_ERR_UNSUPPORTED;
}
static hvd_status fake_test(hvd_request* req, int32_t* done,
                            hvd_completion* out) {
  (void)req, (void)done, (void)out;
  return HVD_ERR_UNSUPPORTED;
}
static hvd_status fake_abort(hvd_transport* t, hvd_status reason,
                             int32_t peer) {
  (void)t, (void)reason, (void)peer;
  return HVD_OK;
}

/* Without the entry symbol, the same table is exported under a near miss. */
#ifdef FAKE_NO_ENTRY
#define FAKE_ENTRY hvd_transport_get_api_v1
#else
#define FAKE_ENTRY hvd_transport_get_api
#endif

HVD_EXPORT const hvd_transport_api* FAKE_ENTRY(uint32_t major, uint32_t minor) {
  static hvd_transport_api api;
  (void)major, (void)minor;
#ifdef FAKE_DECLINE
  return NULL;
#endif
  memset(&api, 0, sizeof api);
  api.struct_size = sizeof api;
  api.kind = HVD_PLUGIN_TRANSPORT;
  api.abi_major = HVD_ABI_VERSION_MAJOR;
  api.abi_minor = HVD_ABI_VERSION_MINOR;
  api.name = "fake";
  api.version = FAKE_VERSION;
  api.init = fake_init;
  api.finalize = fake_finalize;
  api.get_properties = fake_get_properties;
  api.last_error = fake_last_error;
  api.listen = fake_listen;
  api.accept = fake_accept;
  api.connect = fake_connect;
  api.conn_test = fake_conn_test;
  api.conn_peer = fake_conn_peer;
  api.conn_close = fake_conn_close;
  api.listener_close = fake_listener_close;
  api.mr_reg = fake_mr_reg;
  api.mr_dereg = fake_mr_dereg;
  api.isend = fake_isend;
  api.irecv = fake_irecv;
  api.test = fake_test;
  api.abort = fake_abort;
#ifdef FAKE_ABI_MAJOR
  api.abi_major = FAKE_ABI_MAJOR;
#endif
#ifdef FAKE_STRUCT_SIZE
  api.struct_size = FAKE_STRUCT_SIZE;
#endif
#ifdef FAKE_KIND
  api.kind = FAKE_KIND;
#endif
#ifdef FAKE_MISSING
  api.FAKE_MISSING = NULL;
#endif
  return &api;
}
