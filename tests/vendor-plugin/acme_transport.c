/*
 * "acme": a vendor's transport, built outside the Horovod tree against an
 * installed Horovod. It connects ranks of one process through in-memory
 * queues, reads its own [transport.acme] table and logs through the host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "horovod/transport.h"

HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(uint32_t major,
                                                          uint32_t minor);

typedef struct acme_message {
  struct acme_message* next;
  uint64_t tag;
  size_t bytes;
  unsigned char data[];
} acme_message;

struct hvd_transport_s {
  const hvd_host* host;
  hvd_status aborted;
  int32_t abort_peer;
};
struct hvd_listener_s {
  hvd_transport* t;
  hvd_conn* waiting; /* one connect at a time */
};
struct hvd_conn_s {
  hvd_transport* t;
  hvd_conn* peer;
  int32_t self_rank, peer_rank;
  acme_message* inbox;
};
struct hvd_request_s {
  hvd_conn* conn;
  void* buf; /* NULL for a send */
  size_t bytes;
  uint64_t tag;
};

static char acme_error[256];

static hvd_status acme_fail(hvd_status status, const char* text) {
  snprintf(acme_error, sizeof acme_error, "%s", text);
  return status;
}

static hvd_status acme_init(const hvd_host* host, hvd_transport** out) {
  hvd_transport* t = calloc(1, sizeof *t);
  const char* greeting = "no greeting configured";
  size_t i;
  char line[160];
  if (t == NULL) return acme_fail(HVD_ERR_OUT_OF_MEMORY, "out of memory");
  t->host = host;
  t->abort_peer = -1;
  for (i = 0; host->config != NULL && i < host->config->count; ++i) {
    const hvd_config_value* v = &host->config->values[i];
    if (strcmp(v->key, "greeting") == 0) {
      if (v->type != HVD_VALUE_STRING) {
        free(t);
        snprintf(acme_error, sizeof acme_error, "greeting must be a string");
        return host->config_error(host->ctx, "greeting", acme_error);
      }
      greeting = v->string_value;
    }
  }
  snprintf(line, sizeof line, "acme up on %s: %s", host->world->hostname,
           greeting);
  host->log(host->ctx, HVD_LOG_INFO, line);
  *out = t;
  return HVD_OK;
}

static hvd_status acme_finalize(hvd_transport* t) {
  free(t);
  return HVD_OK;
}

static hvd_status acme_get_properties(hvd_transport* t,
                                      hvd_transport_properties* p) {
  (void)t;
  p->mem_kinds = HVD_MEM_BIT(HVD_MEM_HOST);
  p->flags = HVD_TRANSPORT_INTRA_HOST;
  p->tag_bits = 64;
  p->max_requests = 256;
  p->max_message_bytes = 1u << 30;
  p->bandwidth_gbps = 1.0;
  p->latency_us = 1.0;
  p->handle_bytes = sizeof(hvd_listener*);
  return HVD_OK;
}

static const char* acme_last_error(hvd_transport* t) {
  (void)t;
  return acme_error;
}

static hvd_status acme_listen(hvd_transport* t, void* handle,
                              hvd_listener** out) {
  hvd_listener* l = calloc(1, sizeof *l);
  if (l == NULL) return acme_fail(HVD_ERR_OUT_OF_MEMORY, "out of memory");
  l->t = t;
  memcpy(handle, &l, sizeof l);
  *out = l;
  return HVD_OK;
}

static hvd_conn* acme_conn(hvd_transport* t, const hvd_conn_info* info) {
  hvd_conn* c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->t = t;
  c->self_rank = info->self_rank;
  c->peer_rank = -1;
  return c;
}

static hvd_status acme_connect(hvd_transport* t, const void* handle,
                               const hvd_conn_info* info, hvd_conn** out) {
  hvd_listener* l;
  memcpy(&l, handle, sizeof l);
  if (l->waiting != NULL) return HVD_AGAIN;
  if ((*out = l->waiting = acme_conn(t, info)) == NULL) {
    return acme_fail(HVD_ERR_OUT_OF_MEMORY, "out of memory");
  }
  return HVD_OK;
}

static hvd_status acme_accept(hvd_listener* l, const hvd_conn_info* info,
                              hvd_conn** out) {
  hvd_conn* c;
  if (l->waiting == NULL) return HVD_AGAIN;
  if ((c = acme_conn(l->t, info)) == NULL) {
    return acme_fail(HVD_ERR_OUT_OF_MEMORY, "out of memory");
  }
  c->peer = l->waiting;
  l->waiting->peer = c;
  c->peer_rank = l->waiting->self_rank;
  l->waiting->peer_rank = c->self_rank;
  l->waiting = NULL;
  *out = c;
  return HVD_OK;
}

static hvd_status acme_conn_test(hvd_conn* c) {
  return c->peer != NULL ? HVD_OK : HVD_AGAIN;
}

static int32_t acme_conn_peer(hvd_conn* c) { return c->peer_rank; }

static hvd_status acme_conn_close(hvd_conn* c) {
  while (c->inbox != NULL) {
    acme_message* m = c->inbox;
    c->inbox = m->next;
    free(m);
  }
  if (c->peer != NULL) c->peer->peer = NULL;
  free(c);
  return HVD_OK;
}

static hvd_status acme_listener_close(hvd_listener* l) {
  free(l);
  return HVD_OK;
}

static hvd_status acme_mr_reg(hvd_transport* t, void* buf, size_t bytes,
                              hvd_device device, hvd_mr** out) {
  (void)t, (void)bytes, (void)device;
  *out = (hvd_mr*)buf; /* needs no registration */
  return HVD_OK;
}

static hvd_status acme_mr_dereg(hvd_transport* t, hvd_mr* mr) {
  (void)t, (void)mr;
  return HVD_OK;
}

static hvd_request* acme_request(hvd_conn* c, void* buf, size_t bytes,
                                 uint64_t tag) {
  hvd_request* r = malloc(sizeof *r);
  if (r == NULL) return NULL;
  r->conn = c;
  r->buf = buf;
  r->bytes = bytes;
  r->tag = tag;
  return r;
}

static hvd_status acme_isend(hvd_conn* c, const void* buf, size_t bytes,
                             uint64_t tag, hvd_mr* mr, hvd_request** req) {
  acme_message *m, **tail;
  (void)mr;
  if (c->peer == NULL) return acme_fail(HVD_ERR_INVALID_ARGUMENT, "closed");
  if ((m = malloc(sizeof *m + bytes)) == NULL ||
      (*req = acme_request(c, NULL, bytes, tag)) == NULL) {
    free(m);
    return acme_fail(HVD_ERR_OUT_OF_MEMORY, "out of memory");
  }
  m->next = NULL;
  m->tag = tag;
  m->bytes = bytes;
  memcpy(m->data, buf, bytes);
  for (tail = &c->peer->inbox; *tail != NULL; tail = &(*tail)->next) {
  }
  *tail = m;
  return HVD_OK;
}

static hvd_status acme_irecv(hvd_conn* c, void* buf, size_t bytes, uint64_t tag,
                             hvd_mr* mr, hvd_request** req) {
  (void)mr;
  *req = acme_request(c, buf, bytes, tag);
  return *req ? HVD_OK : acme_fail(HVD_ERR_OUT_OF_MEMORY, "out of memory");
}

static hvd_status acme_test(hvd_request* r, int32_t* done,
                            hvd_completion* out) {
  acme_message** at;
  hvd_transport* t = r->conn->t;
  *done = 0;
  out->peer = -1;
  out->bytes = r->bytes;
  out->status = t->aborted;
  if (t->aborted == HVD_OK && r->buf != NULL) {
    for (at = &r->conn->inbox; *at != NULL && (*at)->tag != r->tag;
         at = &(*at)->next) {
    }
    if (*at == NULL) return HVD_OK;
    out->bytes = (*at)->bytes;
    if ((*at)->bytes > r->bytes) {
      out->status = HVD_ERR_TRUNCATED;
      out->peer = r->conn->peer_rank;
    } else {
      memcpy(r->buf, (*at)->data, (*at)->bytes);
    }
    {
      acme_message* m = *at;
      *at = m->next;
      free(m);
    }
  } else if (t->aborted != HVD_OK) {
    out->peer = t->abort_peer;
  }
  *done = 1;
  free(r);
  return HVD_OK;
}

static hvd_status acme_abort(hvd_transport* t, hvd_status reason,
                             int32_t peer) {
  if (t->aborted == HVD_OK) {
    t->abort_peer = peer;
    t->aborted = reason;
  }
  return HVD_OK;
}

const hvd_transport_api* hvd_transport_get_api(uint32_t major, uint32_t minor) {
  static hvd_transport_api api;
  (void)minor;
  if (major != HVD_ABI_VERSION_MAJOR) return NULL;
  memset(&api, 0, sizeof api);
  api.struct_size = sizeof api;
  api.kind = HVD_PLUGIN_TRANSPORT;
  api.abi_major = HVD_ABI_VERSION_MAJOR;
  api.abi_minor = HVD_ABI_VERSION_MINOR;
  api.name = "acme";
  api.version = ACME_VERSION;
  api.init = acme_init;
  api.finalize = acme_finalize;
  api.get_properties = acme_get_properties;
  api.last_error = acme_last_error;
  api.listen = acme_listen;
  api.accept = acme_accept;
  api.connect = acme_connect;
  api.conn_test = acme_conn_test;
  api.conn_peer = acme_conn_peer;
  api.conn_close = acme_conn_close;
  api.listener_close = acme_listener_close;
  api.mr_reg = acme_mr_reg;
  api.mr_dereg = acme_mr_dereg;
  api.isend = acme_isend;
  api.irecv = acme_irecv;
  api.test = acme_test;
  api.abort = acme_abort;
  return &api;
}
