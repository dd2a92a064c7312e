// The tcp transport's table: every entry point checks its arguments and runs
// through guarded(), so nothing is thrown across the ABI.
#include "common/host_access.h"
#include "connection.h"
#include "horovod/transport.h"
#include "horovod_plugin/boundary.h"
#include "listener.h"
#include "transport.h"

namespace {

using hvd_plugin::fail;
using hvd_plugin::guarded;
using hvd_tcp::Connection;
using hvd_tcp::Listener;
using hvd_tcp::Request;
using hvd_tcp::Transport;

// tcp needs no registration; a region only remembers its range.
struct Registration {
  void* buf;
  size_t bytes;
};

Transport* as_transport(hvd_transport* t) {
  if (t == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "tcp: transport is NULL");
  return reinterpret_cast<Transport*>(t);
}
Connection* as_conn(hvd_conn* c) {
  if (c == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "tcp: connection is NULL");
  return reinterpret_cast<Connection*>(c);
}
template <typename T>
void require(T* pointer, const char* what) {
  if (pointer == nullptr) {
    fail(HVD_ERR_INVALID_ARGUMENT, std::string("tcp: ") + what + " is NULL");
  }
}

hvd_status tcp_init(const hvd_host* host, hvd_transport** out) {
  return guarded([&] {
    require(out, "out");
    hvd_transport_common::check_host(host);
    *out = reinterpret_cast<hvd_transport*>(new Transport(host));
    return HVD_OK;
  });
}

hvd_status tcp_finalize(hvd_transport* t) {
  return guarded([&] {
    delete as_transport(t);
    return HVD_OK;
  });
}

hvd_status tcp_get_properties(hvd_transport* t,
                              hvd_transport_properties* props) {
  return guarded([&] {
    require(props, "properties");
    as_transport(t)->properties(props);
    return HVD_OK;
  });
}

const char* tcp_last_error(hvd_transport*) { return hvd_plugin::last_error(); }

hvd_status tcp_listen(hvd_transport* t, void* handle, hvd_listener** out) {
  return guarded([&] {
    require(handle, "handle");
    require(out, "out");
    Listener* l = nullptr;
    hvd_status s = as_transport(t)->listen(handle, &l);
    if (s == HVD_OK) *out = reinterpret_cast<hvd_listener*>(l);
    return s;
  });
}

hvd_status tcp_accept(hvd_listener* l, const hvd_conn_info* info,
                      hvd_conn** out) {
  return guarded([&] {
    require(l, "listener");
    require(out, "out");
    auto* listener = reinterpret_cast<Listener*>(l);
    Connection* c = nullptr;
    hvd_status s = listener->transport().accept(listener, info, &c);
    if (s == HVD_OK) *out = reinterpret_cast<hvd_conn*>(c);
    return s;
  });
}

hvd_status tcp_connect(hvd_transport* t, const void* handle,
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

hvd_status tcp_conn_test(hvd_conn* c) {
  return guarded([&] { return as_conn(c)->handshake(); });
}

int32_t tcp_conn_peer(hvd_conn* c) {
  return c == nullptr ? -1 : reinterpret_cast<Connection*>(c)->peer_rank();
}

hvd_status tcp_conn_close(hvd_conn* c) {
  return guarded([&] {
    Connection* conn = as_conn(c);
    conn->transport().close_connection(conn);
    return HVD_OK;
  });
}

hvd_status tcp_listener_close(hvd_listener* l) {
  return guarded([&] {
    require(l, "listener");
    auto* listener = reinterpret_cast<Listener*>(l);
    listener->transport().close_listener(listener);
    return HVD_OK;
  });
}

hvd_status tcp_mr_reg(hvd_transport* t, void* buf, size_t bytes,
                      hvd_device device, hvd_mr** out) {
  return guarded([&] {
    as_transport(t);
    require(out, "out");
    if (device.kind != HVD_MEM_HOST) {
      fail(HVD_ERR_UNSUPPORTED, "tcp: only host memory can be sent");
    }
    *out = reinterpret_cast<hvd_mr*>(new Registration{buf, bytes});
    return HVD_OK;
  });
}

hvd_status tcp_mr_dereg(hvd_transport* t, hvd_mr* mr) {
  return guarded([&] {
    as_transport(t);
    require(mr, "mr");
    delete reinterpret_cast<Registration*>(mr);
    return HVD_OK;
  });
}

hvd_status tcp_isend(hvd_conn* c, const void* buf, size_t bytes, uint64_t tag,
                     hvd_mr*, hvd_request** req) {
  return guarded([&] {
    require(req, "request");
    Request* r = nullptr;
    hvd_status s = as_conn(c)->isend(buf, bytes, tag, &r);
    if (s == HVD_OK) *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status tcp_irecv(hvd_conn* c, void* buf, size_t bytes, uint64_t tag,
                     hvd_mr*, hvd_request** req) {
  return guarded([&] {
    require(req, "request");
    Request* r = nullptr;
    hvd_status s = as_conn(c)->irecv(buf, bytes, tag, &r);
    if (s == HVD_OK) *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status tcp_test(hvd_request* req, int32_t* done, hvd_completion* out) {
  return guarded([&] {
    require(req, "request");
    require(done, "done");
    auto* r = reinterpret_cast<Request*>(req);
    return r->transport->test(r, done, out);
  });
}

hvd_status tcp_progress(hvd_transport* t) {
  return guarded([&] {
    as_transport(t)->progress();
    return HVD_OK;
  });
}

int tcp_wait_fd(hvd_transport* t) {
  return t == nullptr ? -1 : reinterpret_cast<Transport*>(t)->wait_fd();
}

hvd_status tcp_wait_arm(hvd_transport* t) {
  return guarded([&] { return as_transport(t)->wait_arm(); });
}

hvd_status tcp_abort(hvd_transport* t, hvd_status reason, int32_t peer) {
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
    .name = "tcp",
    .version = "1.0",
    .init = tcp_init,
    .finalize = tcp_finalize,
    .get_properties = tcp_get_properties,
    .last_error = tcp_last_error,
    .listen = tcp_listen,
    .accept = tcp_accept,
    .connect = tcp_connect,
    .conn_test = tcp_conn_test,
    .conn_peer = tcp_conn_peer,
    .conn_close = tcp_conn_close,
    .listener_close = tcp_listener_close,
    .mr_reg = tcp_mr_reg,
    .mr_dereg = tcp_mr_dereg,
    .isend = tcp_isend,
    .irecv = tcp_irecv,
    .test = tcp_test,
    .progress = tcp_progress,
    .wait_fd = tcp_wait_fd,
    .wait_arm = tcp_wait_arm,
    .abort = tcp_abort,
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
