// The shm transport's table: the shared entry points come from
// TransportTable; what is shm's own (memory registration, the data calls
// and how its objects reach their transport) is written here.
#include "collectives.h"
#include "connection.h"
#include "horovod/transport.h"
#include "horovod_plugin/boundary.h"
#include "horovod_plugin/transport_table.h"
#include "transport.h"

namespace {

using hvd_plugin::fail;
using hvd_plugin::guarded;
using hvd_shm::Connection;
using hvd_shm::Listener;
using hvd_shm::MemoryRegion;
using hvd_shm::RemoteRegion;
using hvd_shm::Request;
using hvd_shm::Transport;

struct Impl {
  using Transport = hvd_shm::Transport;
  using Listener = hvd_shm::Listener;
  using Connection = hvd_shm::Connection;
  using Request = hvd_shm::Request;
  static constexpr const char* kName = "shm";
  // Calls from a waiting thread too, one at a time: no state kept in a thread between calls.
  static constexpr uint32_t kThreading = HVD_THREADING_SERIALIZED;
  static Transport& transport_of(Listener* l) { return *l->transport; }
  static Transport& transport_of(Connection* c) { return c->transport(); }
  static hvd_status conn_test(Connection* c) { return c->handshake(); }
  static int32_t peer_rank(Connection* c) { return c->peer_rank(); }
};

using Table = hvd_plugin::TransportTable<Impl>;

hvd_status shm_mr_reg(hvd_transport* t, void* buf, size_t bytes,
                      hvd_device device, hvd_mr** out) {
  return guarded([&] {
    Table::require(out, "out");
    MemoryRegion* mr = nullptr;
    hvd_status s = Table::as_transport(t)->mr_reg(buf, bytes, device, &mr);
    if (s == HVD_OK) *out = reinterpret_cast<hvd_mr*>(mr);
    return s;
  });
}

hvd_status shm_mr_dereg(hvd_transport* t, hvd_mr* mr) {
  return guarded([&] {
    Table::require(mr, "mr");
    return Table::as_transport(t)->mr_dereg(
        reinterpret_cast<MemoryRegion*>(mr));
  });
}

hvd_status shm_isend(hvd_conn* c, const void* buf, size_t bytes, uint64_t tag,
                     hvd_mr* mr, hvd_request** req) {
  return Table::post_request(c, req, [&](Connection* conn, Request** r) {
    return conn->isend(buf, bytes, tag,
                       reinterpret_cast<const MemoryRegion*>(mr), r);
  });
}

hvd_status shm_irecv(hvd_conn* c, void* buf, size_t bytes, uint64_t tag,
                     hvd_mr*, hvd_request** req) {
  return Table::post_request(c, req, [&](Connection* conn, Request** r) {
    return conn->irecv(buf, bytes, tag, r);
  });
}

hvd_status shm_mem_alloc(hvd_transport* t, size_t bytes, hvd_device device,
                         void** ptr, hvd_mr** mr) {
  return guarded([&] {
    Table::require(ptr, "ptr");
    Table::require(mr, "mr");
    MemoryRegion* region = nullptr;
    hvd_status s =
        Table::as_transport(t)->mem_alloc(bytes, device, ptr, &region);
    if (s == HVD_OK) *mr = reinterpret_cast<hvd_mr*>(region);
    return s;
  });
}

hvd_status shm_mem_free(hvd_transport* t, void* ptr, hvd_mr* mr) {
  return guarded([&] {
    Table::require(mr, "mr");
    return Table::as_transport(t)->mem_free(
        ptr, reinterpret_cast<MemoryRegion*>(mr));
  });
}

hvd_status shm_mr_export(hvd_transport* t, hvd_mr* mr, void* key,
                         size_t* key_bytes) {
  return guarded([&] {
    Table::require(mr, "mr");
    Table::require(key, "key");
    Table::require(key_bytes, "key_bytes");
    return Table::as_transport(t)->mr_export(
        reinterpret_cast<MemoryRegion*>(mr), key, key_bytes);
  });
}

hvd_status shm_mr_import(hvd_conn* c, const void* key, size_t key_bytes,
                         hvd_remote_mr** out) {
  return guarded([&] {
    Table::require(out, "out");
    RemoteRegion* region = nullptr;
    hvd_status s = Table::as_conn(c)->import(key, key_bytes, &region);
    if (s == HVD_OK) *out = reinterpret_cast<hvd_remote_mr*>(region);
    return s;
  });
}

hvd_status shm_mr_release(hvd_conn*, hvd_remote_mr* rmr) {
  return guarded([&] {
    Table::require(rmr, "remote region");
    delete reinterpret_cast<RemoteRegion*>(rmr);
    return HVD_OK;
  });
}

void* shm_remote_ptr(hvd_remote_mr* rmr) {
  return rmr == nullptr ? nullptr : reinterpret_cast<RemoteRegion*>(rmr)->base;
}

hvd_status shm_iput(hvd_conn* c, const void* src, hvd_mr*, hvd_remote_mr* dst,
                    uint64_t dst_offset, size_t bytes, hvd_request** req) {
  return Table::post_request(c, req, [&](Connection* conn, Request** r) {
    Table::require(dst, "remote region");
    return conn->iput(src, reinterpret_cast<RemoteRegion*>(dst), dst_offset,
                      bytes, r);
  });
}

hvd_status shm_iget(hvd_conn* c, void* dst, hvd_mr*, hvd_remote_mr* src,
                    uint64_t src_offset, size_t bytes, hvd_request** req) {
  return Table::post_request(c, req, [&](Connection* conn, Request** r) {
    Table::require(src, "remote region");
    return conn->iget(dst, reinterpret_cast<RemoteRegion*>(src), src_offset,
                      bytes, r);
  });
}

const char* describe() {
  return "shared-memory rings; native allreduce (inline, one-shot, two-shot), "
         "allgatherv, broadcast, barrier";
}

hvd_transport_api make_table() {
  hvd_transport_api api =
      Table::api({shm_mr_reg, shm_mr_dereg, shm_isend, shm_irecv},
                 {.describe = describe, .collectives = &hvd_shm::kCollectives});
  api.mem_alloc = shm_mem_alloc;
  api.mem_free = shm_mem_free;
  api.mr_export = shm_mr_export;
  api.mr_import = shm_mr_import;
  api.mr_release = shm_mr_release;
  api.remote_ptr = shm_remote_ptr;
  api.iput = shm_iput;
  api.iget = shm_iget;
  return api;
}

}  // namespace

extern "C" HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(
    uint32_t core_major, uint32_t) {
  static const hvd_transport_api table = make_table();
  return core_major == HVD_ABI_VERSION_MAJOR ? &table : nullptr;
}
