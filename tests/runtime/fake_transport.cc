#include "fake_transport.h"

#include <cstring>

#include "horovod_plugin/enums.h"

struct hvd_request_s {
  hvd_transport_s* owner = nullptr;
  bool done = false;
  hvd_conn_s* conn = nullptr;
  void* buf = nullptr;
  size_t bytes = 0;
  uint64_t tag = 0;
  hvd_completion completion{};
};

struct hvd_mr_s {
  void* buf;
  size_t bytes;
};

namespace {

uint64_t mask(const hvd_conn_s* c, uint64_t tag) {
  uint32_t bits = c->transport->options.tag_bits;
  return bits >= 64 ? tag : tag & ((uint64_t{1} << bits) - 1);
}

hvd_request_s* new_request(hvd_transport_s* t) {
  auto* r = new hvd_request_s;
  r->owner = t;
  t->requests.insert(r);
  return r;
}

// A request already done: `bytes` moved.
hvd_request_s* finished(hvd_transport_s* t, size_t bytes) {
  hvd_request_s* r = new_request(t);
  r->done = true;
  r->completion.struct_size = sizeof(hvd_completion);
  r->completion.status = HVD_OK;
  r->completion.peer = -1;
  r->completion.bytes = bytes;
  return r;
}

hvd_status fake_finalize(hvd_transport* t) {
  for (hvd_request* r : t->requests) delete r;
  for (hvd_conn_s* c : t->conns) delete c;
  delete t;
  return HVD_OK;
}

hvd_status fake_properties(hvd_transport* t, hvd_transport_properties* p) {
  p->mem_kinds = t->options.mem_kinds;
  p->flags = t->options.needs_mr ? HVD_TRANSPORT_NEEDS_MR : 0;
  p->tag_bits = t->options.tag_bits;
  p->max_requests = 8;
  p->max_message_bytes = t->options.max_message;
  p->handle_bytes = 8;
  return HVD_OK;
}

const char* fake_last_error(hvd_transport*) { return ""; }

hvd_status fake_conn_close(hvd_conn* c) {
  c->transport->conns.erase(c);
  delete c;
  return HVD_OK;
}

int32_t fake_conn_peer(hvd_conn* c) { return c->peer_rank; }

hvd_status fake_mr_reg(hvd_transport* t, void* buf, size_t bytes, hvd_device,
                       hvd_mr** out) {
  ++t->registrations;
  *out = new hvd_mr_s{buf, bytes};
  return HVD_OK;
}

hvd_status fake_mr_dereg(hvd_transport* t, hvd_mr* mr) {
  ++t->deregistrations;
  delete mr;
  return HVD_OK;
}

hvd_status fake_isend(hvd_conn* c, const void* buf, size_t bytes, uint64_t tag,
                      hvd_mr* mr, hvd_request** req) {
  hvd_transport_s* t = c->transport;
  if (t->refuse != HVD_OK) return t->refuse;
  if (t->options.needs_mr && !mr) return HVD_ERR_INVALID_ARGUMENT;
  ++t->isends;
  if (t->options.again_every && t->isends % t->options.again_every == 0) {
    return HVD_AGAIN;
  }
  FakeMessage m{mask(c, tag), std::vector<uint8_t>(bytes)};
  if (bytes) std::memcpy(m.data.data(), buf, bytes);
  t->sent.push_back(m);
  c->peer->inbox.push_back(std::move(m));
  *req = finished(t, bytes);
  return HVD_OK;
}

hvd_status fake_irecv(hvd_conn* c, void* buf, size_t bytes, uint64_t tag,
                      hvd_mr* mr, hvd_request** req) {
  if (c->transport->refuse != HVD_OK) return c->transport->refuse;
  if (c->transport->options.needs_mr && !mr) return HVD_ERR_INVALID_ARGUMENT;
  hvd_request_s* r = new_request(c->transport);
  r->conn = c;
  r->buf = buf;
  r->bytes = bytes;
  r->tag = mask(c, tag);
  *req = r;
  return HVD_OK;
}

hvd_status fake_test(hvd_request* r, int32_t* done, hvd_completion* out) {
  if (!r->done) {
    auto& inbox = r->conn->inbox;
    for (auto it = inbox.begin(); it != inbox.end(); ++it) {
      if (it->tag != r->tag) continue;
      r->completion.struct_size = sizeof(hvd_completion);
      r->completion.peer = -1;
      if (it->data.size() > r->bytes) {
        r->completion.status = HVD_ERR_TRUNCATED;
        r->completion.peer = r->conn->peer_rank;
      } else {
        if (!it->data.empty())
          std::memcpy(r->buf, it->data.data(), it->data.size());
        r->completion.status = HVD_OK;
        r->completion.bytes = it->data.size();
      }
      inbox.erase(it);
      r->done = true;
      break;
    }
  }
  *done = r->done ? 1 : 0;
  if (r->done) {
    *out = r->completion;
    hvd_transport_s* owner = r->owner;
    owner->requests.erase(r);
    delete r;
  }
  return HVD_OK;
}

hvd_status fake_abort(hvd_transport*, hvd_status, int32_t) { return HVD_OK; }

const hvd_transport_api kApi = [] {
  hvd_transport_api a{};
  a.struct_size = sizeof a;
  a.kind = HVD_PLUGIN_TRANSPORT;
  a.abi_major = HVD_ABI_VERSION_MAJOR;
  a.abi_minor = HVD_ABI_VERSION_MINOR;
  a.name = "fake";
  a.version = "test";
  a.finalize = fake_finalize;
  a.get_properties = fake_properties;
  a.last_error = fake_last_error;
  a.conn_peer = fake_conn_peer;
  a.conn_close = fake_conn_close;
  a.mr_reg = fake_mr_reg;
  a.mr_dereg = fake_mr_dereg;
  a.isend = fake_isend;
  a.irecv = fake_irecv;
  a.test = fake_test;
  a.abort = fake_abort;
  return a;
}();

hvd_status comm_create(hvd_transport* t, const hvd_team* team,
                       hvd_coll_comm** out) {
  if (t->options.create_never_done ||
      (t->options.create_again_first && t->comm_create_calls++ == 0)) {
    return HVD_AGAIN;
  }
  auto* c = new FakeComm;
  c->transport = t;
  c->members.assign(team->world_ranks, team->world_ranks + team->size);
  c->mem_kinds = t->options.mem_kinds;
  c->log = t->options.collectives_log;
  if (c->log) ++c->log->creates;
  *out = reinterpret_cast<hvd_coll_comm*>(c);
  return HVD_OK;
}

hvd_status comm_destroy(hvd_coll_comm* c) {
  if (fake_comm(c)->log) ++fake_comm(c)->log->destroys;
  delete fake_comm(c);
  return HVD_OK;
}

int32_t supports(hvd_coll_comm* c, hvd_collective, hvd_dtype, hvd_reduce_op,
                 hvd_mem_kind mem) {
  return (fake_comm(c)->mem_kinds & HVD_MEM_BIT(mem)) ? 1 : 0;
}

hvd_status allreduce(hvd_coll_comm* c, const void*, void*, size_t count,
                     hvd_dtype dtype, hvd_reduce_op, hvd_stream,
                     hvd_request** req) {
  *req =
      finished(fake_comm(c)->transport, count * hvd_plugin::dtype_size(dtype));
  return HVD_OK;
}

hvd_status comm_abort(hvd_coll_comm* c, hvd_status reason, int32_t) {
  fake_comm(c)->aborted = reason;
  return HVD_OK;
}

const hvd_transport_collectives kCollectives = [] {
  hvd_transport_collectives c{};
  c.struct_size = sizeof c;
  c.type = HVD_EXT_TRANSPORT_COLLECTIVES;
  c.comm_create = comm_create;
  c.comm_destroy = comm_destroy;
  c.supports = supports;
  c.allreduce = allreduce;
  c.comm_abort = comm_abort;
  return c;
}();

const hvd_transport_api kCollectivesApi = [] {
  hvd_transport_api a = kApi;
  a.ext = reinterpret_cast<const hvd_extension*>(&kCollectives);
  return a;
}();

}  // namespace

const hvd_transport_api* fake_transport_api() { return &kApi; }

FakeComm* fake_comm(hvd_coll_comm* c) { return reinterpret_cast<FakeComm*>(c); }

const hvd_transport_collectives* fake_collectives() { return &kCollectives; }

const hvd_transport_api* fake_collectives_transport_api() {
  return &kCollectivesApi;
}

hvd_transport_s* fake_transport(FakeOptions options) {
  auto* t = new hvd_transport_s;
  t->options = options;
  return t;
}

void fake_connect(hvd_transport_s* a, int32_t rank_a, hvd_transport_s* b,
                  int32_t rank_b, hvd_conn_s** conn_a, hvd_conn_s** conn_b) {
  auto* ca = new hvd_conn_s;
  auto* cb = new hvd_conn_s;
  ca->transport = a;
  cb->transport = b;
  ca->peer = cb;
  cb->peer = ca;
  ca->peer_rank = rank_b;
  cb->peer_rank = rank_a;
  a->conns.insert(ca);
  b->conns.insert(cb);
  *conn_a = ca;
  *conn_b = cb;
}
