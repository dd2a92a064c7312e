/*
 * A small but real transport built against the frozen 1.0 headers: two
 * connections of one process talk through in-memory queues. It uses the host
 * table (log, world, mem_alloc) as a 1.0 plugin would, so the test proves the
 * current core still serves a 1.0 plugin.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "horovod/transport.h"

typedef struct message {
  struct message* next;
  uint64_t tag;
  size_t bytes;
  unsigned char data[];
} message;

struct hvd_conn_s {
  hvd_transport* transport;
  hvd_conn* peer; /* the other end, once accepted */
  int32_t self_rank, peer_rank;
  uint64_t epoch;
  hvd_status failed;      /* HVD_OK or why the connection is dead */
  message* inbox;         /* messages sent to this end, oldest first */
  hvd_conn* next_pending; /* in the listener's accept queue */
};

struct hvd_listener_s {
  hvd_transport* transport;
  hvd_conn* pending;
};

struct hvd_request_s {
  hvd_conn* conn;
  int is_recv;
  void* buf;
  size_t bytes;
  uint64_t tag;
};

struct hvd_transport_s {
  const hvd_host* host;
  hvd_status abort_reason;
  int32_t abort_peer;
};

typedef struct handle {
  uint64_t magic;
  uint64_t pid;
  hvd_listener* listener;
} handle;

#define LOOPBACK_MAGIC 0x6c6f6f7062616b31ull

static char last_error_text[256];

static hvd_status fail(hvd_status status, const char* text) {
  snprintf(last_error_text, sizeof last_error_text, "%s", text);
  return status;
}

static void* host_alloc(const hvd_host* host, size_t bytes) {
  return host->mem_alloc(host->ctx, bytes, 64);
}

static void host_free(const hvd_host* host, void* ptr) {
  host->mem_free(host->ctx, ptr);
}

static hvd_status lb_init(const hvd_host* host, hvd_transport** out) {
  hvd_transport* t;
  if (host == NULL || host->abi_major != HVD_ABI_VERSION_MAJOR) {
    return fail(HVD_ERR_VERSION, "needs a host table of ABI 1.x");
  }
  t = (hvd_transport*)host_alloc(host, sizeof *t);
  if (t == NULL) return fail(HVD_ERR_OUT_OF_MEMORY, "no memory");
  memset(t, 0, sizeof *t);
  t->host = host;
  t->abort_peer = -1;
  if (host->log_enabled(host->ctx, HVD_LOG_DEBUG)) {
    host->log(host->ctx, HVD_LOG_DEBUG, "loopback transport up");
  }
  *out = t;
  return HVD_OK;
}

static hvd_status lb_finalize(hvd_transport* t) {
  host_free(t->host, t);
  return HVD_OK;
}

static hvd_status lb_get_properties(hvd_transport* t,
                                    hvd_transport_properties* props) {
  (void)t;
  if (props->struct_size <
      HVD_STRUCT_SIZE(hvd_transport_properties, handle_bytes)) {
    return fail(HVD_ERR_INVALID_ARGUMENT, "properties struct too small");
  }
  props->ext = NULL;
  props->mem_kinds = HVD_MEM_BIT(HVD_MEM_HOST);
  props->flags = HVD_TRANSPORT_INTRA_HOST;
  props->tag_bits = 64;
  props->max_requests = 1024;
  props->max_message_bytes = (uint64_t)1 << 30;
  props->bandwidth_gbps = 10.0;
  props->latency_us = 1.0;
  props->handle_bytes = sizeof(handle);
  return HVD_OK;
}

static const char* lb_last_error(hvd_transport* t) {
  (void)t;
  return last_error_text;
}

static hvd_status lb_listen(hvd_transport* t, void* out_handle,
                            hvd_listener** out) {
  handle h;
  hvd_listener* l = (hvd_listener*)host_alloc(t->host, sizeof *l);
  if (l == NULL) return fail(HVD_ERR_OUT_OF_MEMORY, "no memory");
  l->transport = t;
  l->pending = NULL;
  h.magic = LOOPBACK_MAGIC;
  h.pid = (uint64_t)getpid();
  h.listener = l;
  memcpy(out_handle, &h, sizeof h);
  *out = l;
  return HVD_OK;
}

static hvd_conn* new_conn(hvd_transport* t, const hvd_conn_info* info) {
  hvd_conn* c = (hvd_conn*)host_alloc(t->host, sizeof *c);
  if (c == NULL) return NULL;
  memset(c, 0, sizeof *c);
  c->transport = t;
  c->self_rank = info->self_rank;
  c->peer_rank = -1;
  c->epoch = info->epoch;
  return c;
}

static hvd_status lb_connect(hvd_transport* t, const void* in_handle,
                             const hvd_conn_info* info, hvd_conn** out) {
  handle h;
  hvd_conn* c;
  memcpy(&h, in_handle, sizeof h);
  if (h.magic != LOOPBACK_MAGIC || h.pid != (uint64_t)getpid()) {
    return fail(HVD_ERR_INVALID_ARGUMENT,
                "not a loopback handle of this "
                "process");
  }
  c = new_conn(t, info);
  if (c == NULL) return fail(HVD_ERR_OUT_OF_MEMORY, "no memory");
  c->next_pending = h.listener->pending;
  h.listener->pending = c;
  *out = c;
  return HVD_OK;
}

static hvd_status lb_accept(hvd_listener* l, const hvd_conn_info* info,
                            hvd_conn** out) {
  hvd_conn* client = l->pending;
  hvd_conn* c;
  if (client == NULL) return HVD_AGAIN;
  c = new_conn(l->transport, info);
  if (c == NULL) return fail(HVD_ERR_OUT_OF_MEMORY, "no memory");
  l->pending = client->next_pending;
  c->peer = client;
  client->peer = c;
  c->peer_rank = client->self_rank;
  client->peer_rank = c->self_rank;
  if (c->epoch != client->epoch) {
    c->failed = client->failed = HVD_ERR_EPOCH_MISMATCH;
  }
  *out = c;
  return HVD_OK;
}

static hvd_status lb_conn_test(hvd_conn* c) {
  if (c->failed != HVD_OK) return fail(c->failed, "epoch mismatch");
  return c->peer != NULL ? HVD_OK : HVD_AGAIN;
}

static int32_t lb_conn_peer(hvd_conn* c) { return c->peer_rank; }

static hvd_status lb_conn_close(hvd_conn* c) {
  const hvd_host* host = c->transport->host;
  while (c->inbox != NULL) {
    message* m = c->inbox;
    c->inbox = m->next;
    host_free(host, m);
  }
  if (c->peer != NULL) c->peer->peer = NULL;
  host_free(host, c);
  return HVD_OK;
}

static hvd_status lb_listener_close(hvd_listener* l) {
  host_free(l->transport->host, l);
  return HVD_OK;
}

static int mr_dummy;

static hvd_status lb_mr_reg(hvd_transport* t, void* buf, size_t bytes,
                            hvd_device device, hvd_mr** out) {
  (void)t, (void)buf, (void)bytes;
  if (device.kind != HVD_MEM_HOST) {
    return fail(HVD_ERR_UNSUPPORTED, "host memory only");
  }
  *out = (hvd_mr*)&mr_dummy;
  return HVD_OK;
}

static hvd_status lb_mr_dereg(hvd_transport* t, hvd_mr* mr) {
  (void)t, (void)mr;
  return HVD_OK;
}

static hvd_request* new_request(hvd_conn* c, int is_recv, void* buf,
                                size_t bytes, uint64_t tag) {
  hvd_request* r = (hvd_request*)host_alloc(c->transport->host, sizeof *r);
  if (r == NULL) return NULL;
  r->conn = c;
  r->is_recv = is_recv;
  r->buf = buf;
  r->bytes = bytes;
  r->tag = tag;
  return r;
}

static hvd_status lb_isend(hvd_conn* c, const void* buf, size_t bytes,
                           uint64_t tag, hvd_mr* mr, hvd_request** req) {
  message* m;
  message** tail;
  (void)mr;
  if (c->peer == NULL) return fail(HVD_ERR_INVALID_ARGUMENT, "not connected");
  m = (message*)host_alloc(c->transport->host, sizeof *m + bytes);
  if (m == NULL) return fail(HVD_ERR_OUT_OF_MEMORY, "no memory");
  *req = new_request(c, 0, NULL, bytes, tag);
  if (*req == NULL) {
    host_free(c->transport->host, m);
    return fail(HVD_ERR_OUT_OF_MEMORY, "no memory");
  }
  m->next = NULL;
  m->tag = tag;
  m->bytes = bytes;
  if (bytes > 0) memcpy(m->data, buf, bytes);
  for (tail = &c->peer->inbox; *tail != NULL; tail = &(*tail)->next) {
  }
  *tail = m;
  return HVD_OK;
}

static hvd_status lb_irecv(hvd_conn* c, void* buf, size_t bytes, uint64_t tag,
                           hvd_mr* mr, hvd_request** req) {
  (void)mr;
  *req = new_request(c, 1, buf, bytes, tag);
  return *req != NULL ? HVD_OK : fail(HVD_ERR_OUT_OF_MEMORY, "no memory");
}

static void complete(hvd_request* r, int32_t* done, hvd_completion* out,
                     hvd_status status, int32_t peer, uint64_t bytes) {
  out->status = status;
  out->peer = peer;
  out->bytes = bytes;
  *done = 1;
  host_free(r->conn->transport->host, r);
}

static hvd_status lb_test(hvd_request* r, int32_t* done, hvd_completion* out) {
  hvd_transport* t = r->conn->transport;
  message** at;
  *done = 0;
  if (t->abort_reason != HVD_OK) {
    complete(r, done, out, t->abort_reason, t->abort_peer, 0);
    return HVD_OK;
  }
  if (!r->is_recv) {
    complete(r, done, out, HVD_OK, -1, r->bytes);
    return HVD_OK;
  }
  for (at = &r->conn->inbox; *at != NULL; at = &(*at)->next) {
    message* m = *at;
    if (m->tag != r->tag) continue;
    *at = m->next;
    if (m->bytes > r->bytes) {
      complete(r, done, out, HVD_ERR_TRUNCATED, r->conn->peer_rank, 0);
    } else {
      if (m->bytes > 0) memcpy(r->buf, m->data, m->bytes);
      complete(r, done, out, HVD_OK, -1, m->bytes);
    }
    host_free(t->host, m);
    return HVD_OK;
  }
  return HVD_OK;
}

static hvd_status lb_abort(hvd_transport* t, hvd_status reason, int32_t peer) {
  if (t->abort_reason == HVD_OK) {
    t->abort_reason = reason;
    t->abort_peer = peer;
  }
  return HVD_OK;
}

HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(uint32_t major,
                                                          uint32_t minor);

HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(uint32_t major,
                                                          uint32_t minor) {
  static hvd_transport_api api;
  (void)minor;
  if (major != HVD_ABI_VERSION_MAJOR) return NULL;
  memset(&api, 0, sizeof api);
  api.struct_size = sizeof api;
  api.kind = HVD_PLUGIN_TRANSPORT;
  api.abi_major = HVD_ABI_VERSION_MAJOR;
  api.abi_minor = HVD_ABI_VERSION_MINOR;
  api.name = "loopback";
  api.version = "1.0-frozen";
  api.init = lb_init;
  api.finalize = lb_finalize;
  api.get_properties = lb_get_properties;
  api.last_error = lb_last_error;
  api.listen = lb_listen;
  api.accept = lb_accept;
  api.connect = lb_connect;
  api.conn_test = lb_conn_test;
  api.conn_peer = lb_conn_peer;
  api.conn_close = lb_conn_close;
  api.listener_close = lb_listener_close;
  api.mr_reg = lb_mr_reg;
  api.mr_dereg = lb_mr_dereg;
  api.isend = lb_isend;
  api.irecv = lb_irecv;
  api.test = lb_test;
  api.abort = lb_abort;
  return &api;
}
