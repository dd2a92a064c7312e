// The shm transport's table: every entry point checks its arguments and runs
// through guarded(), so nothing is thrown across the ABI.
#include "common/host_access.h"
#include "connection.h"
#include "horovod/transport.h"
#include "horovod_plugin/boundary.h"
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

Transport* as_transport(hvd_transport* t) {
  if (t == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "shm: transport is NULL");
  return reinterpret_cast<Transport*>(t);
}
Connection* as_conn(hvd_conn* c) {
  if (c == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "shm: connection is NULL");
  return reinterpret_cast<Connection*>(c);
}
template <typename T>
void require(T* pointer, const char* what) {
  if (pointer == nullptr) {
    fail(HVD_ERR_INVALID_ARGUMENT, std::string("shm: ") + what + " is NULL");
  }
}

hvd_status shm_init(const hvd_host* host, hvd_transport** out) {
  return guarded([&] {
    require(out, "out");
    hvd_transport_common::check_host(host);
    *out = reinterpret_cast<hvd_transport*>(new Transport(host));
    return HVD_OK;
  });
}

hvd_status shm_finalize(hvd_transport* t) {
  return guarded([&] {
    delete as_transport(t);
    return HVD_OK;
  });
}

hvd_status shm_get_properties(hvd_transport* t,
                              hvd_transport_properties* props) {
  return guarded([&] {
    require(props, "properties");
    as_transport(t)->properties(props);
    return HVD_OK;
  });
}

const char* shm_last_error(hvd_transport*) { return hvd_plugin::last_error(); }

hvd_status shm_listen(hvd_transport* t, void* handle, hvd_listener** out) {
  return guarded([&] {
    require(handle, "handle");
    require(out, "out");
    Listener* l = nullptr;
    hvd_status s = as_transport(t)->listen(handle, &l);
    if (s == HVD_OK) *out = reinterpret_cast<hvd_listener*>(l);
    return s;
  });
}

hvd_status shm_accept(hvd_listener* l, const hvd_conn_info* info,
                      hvd_conn** out) {
  return guarded([&] {
    require(l, "listener");
    require(out, "out");
    auto* listener = reinterpret_cast<Listener*>(l);
    Connection* c = nullptr;
    hvd_status s = listener->transport->accept(listener, info, &c);
    if (s == HVD_OK) *out = reinterpret_cast<hvd_conn*>(c);
    return s;
  });
}

hvd_status shm_connect(hvd_transport* t, const void* handle,
                       const hvd_conn_info* info, hvd_conn** out) {
  return guarded([&] {
    require(handle, "handle");
    require(out, "out");
    Connection* c = nullptr;
    hvd_status s = as_transport(t)->connect(handle, info, &c);
    if (s == HVD_OK) *out = reinterpret_cast<hvd_conn*>(c);
    return s;
  });
}

hvd_status shm_conn_test(hvd_conn* c) {
  return guarded([&] { return as_conn(c)->handshake(); });
}

int32_t shm_conn_peer(hvd_conn* c) {
  return c == nullptr ? -1 : reinterpret_cast<Connection*>(c)->peer_rank();
}

hvd_status shm_conn_close(hvd_conn* c) {
  return guarded([&] {
    Connection* conn = as_conn(c);
    conn->transport().close_connection(conn);
    return HVD_OK;
  });
}

hvd_status shm_listener_close(hvd_listener* l) {
  return guarded([&] {
    require(l, "listener");
    auto* listener = reinterpret_cast<Listener*>(l);
    listener->transport->close_listener(listener);
    return HVD_OK;
  });
}

hvd_status shm_mr_reg(hvd_transport* t, void* buf, size_t bytes,
                      hvd_device device, hvd_mr** out) {
  return guarded([&] {
    require(out, "out");
    MemoryRegion* mr = nullptr;
    hvd_status s = as_transport(t)->mr_reg(buf, bytes, device, &mr);
    if (s == HVD_OK) *out = reinterpret_cast<hvd_mr*>(mr);
    return s;
  });
}

hvd_status shm_mr_dereg(hvd_transport* t, hvd_mr* mr) {
  return guarded([&] {
    require(mr, "mr");
    return as_transport(t)->mr_dereg(reinterpret_cast<MemoryRegion*>(mr));
  });
}

hvd_status shm_isend(hvd_conn* c, const void* buf, size_t bytes, uint64_t tag,
                     hvd_mr* mr, hvd_request** req) {
  return guarded([&] {
    require(req, "request");
    Request* r = nullptr;
    hvd_status s = as_conn(c)->isend(
        buf, bytes, tag, reinterpret_cast<const MemoryRegion*>(mr), &r);
    if (s == HVD_OK) *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status shm_irecv(hvd_conn* c, void* buf, size_t bytes, uint64_t tag,
                     hvd_mr*, hvd_request** req) {
  return guarded([&] {
    require(req, "request");
    Request* r = nullptr;
    hvd_status s = as_conn(c)->irecv(buf, bytes, tag, &r);
    if (s == HVD_OK) *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status shm_test(hvd_request* req, int32_t* done, hvd_completion* out) {
  return guarded([&] {
    require(req, "request");
    require(done, "done");
    auto* r = reinterpret_cast<Request*>(req);
    return r->transport->test(r, done, out);
  });
}

hvd_status shm_progress(hvd_transport* t) {
  return guarded([&] {
    as_transport(t)->progress();
    return HVD_OK;
  });
}

int shm_wait_fd(hvd_transport* t) {
  return t == nullptr ? -1 : reinterpret_cast<Transport*>(t)->wait_fd();
}

hvd_status shm_wait_arm(hvd_transport* t) {
  return guarded([&] { return as_transport(t)->wait_arm(); });
}

hvd_status shm_abort(hvd_transport* t, hvd_status reason, int32_t peer) {
  return guarded([&] {
    as_transport(t)->abort(reason, peer);
    return HVD_OK;
  });
}

hvd_status shm_mem_alloc(hvd_transport* t, size_t bytes, hvd_device device,
                         void** ptr, hvd_mr** mr) {
  return guarded([&] {
    require(ptr, "ptr");
    require(mr, "mr");
    MemoryRegion* region = nullptr;
    hvd_status s = as_transport(t)->mem_alloc(bytes, device, ptr, &region);
    if (s == HVD_OK) *mr = reinterpret_cast<hvd_mr*>(region);
    return s;
  });
}

hvd_status shm_mem_free(hvd_transport* t, void* ptr, hvd_mr* mr) {
  return guarded([&] {
    require(mr, "mr");
    return as_transport(t)->mem_free(ptr, reinterpret_cast<MemoryRegion*>(mr));
  });
}

hvd_status shm_mr_export(hvd_transport* t, hvd_mr* mr, void* key,
                         size_t* key_bytes) {
  return guarded([&] {
    require(mr, "mr");
    require(key, "key");
    require(key_bytes, "key_bytes");
    return as_transport(t)->mr_export(reinterpret_cast<MemoryRegion*>(mr), key,
                                      key_bytes);
  });
}

hvd_status shm_mr_import(hvd_conn* c, const void* key, size_t key_bytes,
                         hvd_remote_mr** out) {
  return guarded([&] {
    require(out, "out");
    RemoteRegion* region = nullptr;
    hvd_status s = as_conn(c)->import(key, key_bytes, &region);
    if (s == HVD_OK) *out = reinterpret_cast<hvd_remote_mr*>(region);
    return s;
  });
}

hvd_status shm_mr_release(hvd_conn*, hvd_remote_mr* rmr) {
  return guarded([&] {
    require(rmr, "remote region");
    delete reinterpret_cast<RemoteRegion*>(rmr);
    return HVD_OK;
  });
}

void* shm_remote_ptr(hvd_remote_mr* rmr) {
  return rmr == nullptr ? nullptr : reinterpret_cast<RemoteRegion*>(rmr)->base;
}

hvd_status shm_iput(hvd_conn* c, const void* src, hvd_mr*, hvd_remote_mr* dst,
                    uint64_t dst_offset, size_t bytes, hvd_request** req) {
  return guarded([&] {
    require(dst, "remote region");
    require(req, "request");
    Request* r = nullptr;
    hvd_status s = as_conn(c)->iput(src, reinterpret_cast<RemoteRegion*>(dst),
                                    dst_offset, bytes, &r);
    if (s == HVD_OK) *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status shm_iget(hvd_conn* c, void* dst, hvd_mr*, hvd_remote_mr* src,
                    uint64_t src_offset, size_t bytes, hvd_request** req) {
  return guarded([&] {
    require(src, "remote region");
    require(req, "request");
    Request* r = nullptr;
    hvd_status s = as_conn(c)->iget(dst, reinterpret_cast<RemoteRegion*>(src),
                                    src_offset, bytes, &r);
    if (s == HVD_OK) *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

const hvd_transport_api kApi = {
    .struct_size = HVD_STRUCT_SIZE(hvd_transport_api, iget),
    .ext = nullptr,
    .kind = HVD_PLUGIN_TRANSPORT,
    .abi_major = HVD_ABI_VERSION_MAJOR,
    .abi_minor = HVD_ABI_VERSION_MINOR,
    .name = "shm",
    .version = "1.0",
    .init = shm_init,
    .finalize = shm_finalize,
    .get_properties = shm_get_properties,
    .last_error = shm_last_error,
    .listen = shm_listen,
    .accept = shm_accept,
    .connect = shm_connect,
    .conn_test = shm_conn_test,
    .conn_peer = shm_conn_peer,
    .conn_close = shm_conn_close,
    .listener_close = shm_listener_close,
    .mr_reg = shm_mr_reg,
    .mr_dereg = shm_mr_dereg,
    .isend = shm_isend,
    .irecv = shm_irecv,
    .test = shm_test,
    .progress = shm_progress,
    .wait_fd = shm_wait_fd,
    .wait_arm = shm_wait_arm,
    .abort = shm_abort,
    .mem_alloc = shm_mem_alloc,
    .mem_free = shm_mem_free,
    .mr_export = shm_mr_export,
    .mr_import = shm_mr_import,
    .mr_release = shm_mr_release,
    .remote_ptr = shm_remote_ptr,
    .iput = shm_iput,
    .iget = shm_iget,
};

}  // namespace

extern "C" HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(
    uint32_t core_major, uint32_t) {
  return core_major == HVD_ABI_VERSION_MAJOR ? &kApi : nullptr;
}
