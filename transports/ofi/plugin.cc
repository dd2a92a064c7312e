// The ofi transport's table: every entry point checks its arguments and runs
// through guarded(), so nothing is thrown across the ABI.
#include "common/host_access.h"
#include "horovod/transport.h"
#include "horovod_plugin/boundary.h"
#include "transport.h"

namespace {

using hvd_ofi::Connection;
using hvd_ofi::Listener;
using hvd_ofi::Registration;
using hvd_ofi::Request;
using hvd_ofi::Transport;
using hvd_plugin::fail;
using hvd_plugin::guarded;

Transport* as_transport(hvd_transport* t) {
  if (t == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "ofi: transport is NULL");
  return reinterpret_cast<Transport*>(t);
}
Connection* as_conn(hvd_conn* c) {
  if (c == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "ofi: connection is NULL");
  return reinterpret_cast<Connection*>(c);
}
template <typename T>
void require(T* pointer, const char* what) {
  if (pointer == nullptr) {
    fail(HVD_ERR_INVALID_ARGUMENT, std::string("ofi: ") + what + " is NULL");
  }
}

hvd_status ofi_init(const hvd_host* host, hvd_transport** out) {
  return guarded([&] {
    require(out, "out");
    hvd_transport_common::check_host(host);
    *out = reinterpret_cast<hvd_transport*>(new Transport(host));
    return HVD_OK;
  });
}

hvd_status ofi_finalize(hvd_transport* t) {
  return guarded([&] {
    delete as_transport(t);
    return HVD_OK;
  });
}

hvd_status ofi_get_properties(hvd_transport* t,
                              hvd_transport_properties* props) {
  return guarded([&] {
    require(props, "properties");
    as_transport(t)->properties(props);
    return HVD_OK;
  });
}

const char* ofi_last_error(hvd_transport*) { return hvd_plugin::last_error(); }

hvd_status ofi_listen(hvd_transport* t, void* handle, hvd_listener** out) {
  return guarded([&] {
    require(handle, "handle");
    require(out, "out");
    Listener* l = nullptr;
    hvd_status s = as_transport(t)->listen(handle, &l);
    if (s == HVD_OK) *out = reinterpret_cast<hvd_listener*>(l);
    return s;
  });
}

hvd_status ofi_accept(hvd_listener* l, const hvd_conn_info* info,
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

hvd_status ofi_connect(hvd_transport* t, const void* handle,
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

hvd_status ofi_conn_test(hvd_conn* c) {
  return guarded([&] {
    Connection* conn = as_conn(c);
    return conn->transport->conn_test(conn);
  });
}

int32_t ofi_conn_peer(hvd_conn* c) {
  return c == nullptr ? -1 : reinterpret_cast<Connection*>(c)->peer_rank;
}

hvd_status ofi_conn_close(hvd_conn* c) {
  return guarded([&] {
    Connection* conn = as_conn(c);
    conn->transport->close_connection(conn);
    return HVD_OK;
  });
}

hvd_status ofi_listener_close(hvd_listener* l) {
  return guarded([&] {
    require(l, "listener");
    auto* listener = reinterpret_cast<Listener*>(l);
    listener->transport->close_listener(listener);
    return HVD_OK;
  });
}

hvd_status ofi_mr_reg(hvd_transport* t, void* buf, size_t bytes,
                      hvd_device device, hvd_mr** out) {
  return guarded([&] {
    Transport* transport = as_transport(t);
    require(out, "out");
    if (device.kind != HVD_MEM_HOST) {
      fail(HVD_ERR_UNSUPPORTED, "ofi: only host memory can be sent");
    }
    *out = reinterpret_cast<hvd_mr*>(transport->mr_reg(buf, bytes));
    return HVD_OK;
  });
}

hvd_status ofi_mr_dereg(hvd_transport* t, hvd_mr* mr) {
  return guarded([&] {
    Transport* transport = as_transport(t);
    require(mr, "mr");
    transport->mr_dereg(reinterpret_cast<Registration*>(mr));
    return HVD_OK;
  });
}

hvd_status ofi_isend(hvd_conn* c, const void* buf, size_t bytes, uint64_t tag,
                     hvd_mr* mr, hvd_request** req) {
  return guarded([&] {
    require(req, "request");
    Request* r = nullptr;
    Connection* conn = as_conn(c);
    hvd_status s = conn->transport->isend(
        conn, buf, bytes, tag, reinterpret_cast<Registration*>(mr), &r);
    if (s == HVD_OK) *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status ofi_irecv(hvd_conn* c, void* buf, size_t bytes, uint64_t tag,
                     hvd_mr* mr, hvd_request** req) {
  return guarded([&] {
    require(req, "request");
    Request* r = nullptr;
    Connection* conn = as_conn(c);
    hvd_status s = conn->transport->irecv(
        conn, buf, bytes, tag, reinterpret_cast<Registration*>(mr), &r);
    if (s == HVD_OK) *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status ofi_test(hvd_request* req, int32_t* done, hvd_completion* out) {
  return guarded([&] {
    require(req, "request");
    require(done, "done");
    auto* r = reinterpret_cast<Request*>(req);
    return r->transport->test(r, done, out);
  });
}

hvd_status ofi_progress(hvd_transport* t) {
  return guarded([&] {
    as_transport(t)->progress();
    return HVD_OK;
  });
}

int ofi_wait_fd(hvd_transport* t) {
  return t == nullptr ? -1 : reinterpret_cast<Transport*>(t)->wait_fd();
}

hvd_status ofi_wait_arm(hvd_transport* t) {
  return guarded([&] { return as_transport(t)->wait_arm(); });
}

hvd_status ofi_abort(hvd_transport* t, hvd_status reason, int32_t peer) {
  return guarded([&] {
    as_transport(t)->abort(reason, peer);
    return HVD_OK;
  });
}

const hvd_transport_api kApi = {
    .struct_size = HVD_STRUCT_SIZE(hvd_transport_api, iget),
    .ext = nullptr,
    .kind = HVD_PLUGIN_TRANSPORT,
    .abi_major = HVD_ABI_VERSION_MAJOR,
    .abi_minor = HVD_ABI_VERSION_MINOR,
    .name = "ofi",
    .version = "1.0",
    .init = ofi_init,
    .finalize = ofi_finalize,
    .get_properties = ofi_get_properties,
    .last_error = ofi_last_error,
    .listen = ofi_listen,
    .accept = ofi_accept,
    .connect = ofi_connect,
    .conn_test = ofi_conn_test,
    .conn_peer = ofi_conn_peer,
    .conn_close = ofi_conn_close,
    .listener_close = ofi_listener_close,
    .mr_reg = ofi_mr_reg,
    .mr_dereg = ofi_mr_dereg,
    .isend = ofi_isend,
    .irecv = ofi_irecv,
    .test = ofi_test,
    .progress = ofi_progress,
    .wait_fd = ofi_wait_fd,
    .wait_arm = ofi_wait_arm,
    .abort = ofi_abort,
    .mem_alloc = nullptr,
    .mem_free = nullptr,
    .mr_export = nullptr,
    .mr_import = nullptr,
    .mr_release = nullptr,
    .remote_ptr = nullptr,
    .iput = nullptr,
    .iget = nullptr,
};

}  // namespace

extern "C" HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(
    uint32_t core_major, uint32_t) {
  return core_major == HVD_ABI_VERSION_MAJOR ? &kApi : nullptr;
}
