// The ucx transport's table: every entry point checks its arguments and runs
// through guarded(), so nothing is thrown across the ABI.
#include "common/host_access.h"
#include "connection.h"
#include "horovod/transport.h"
#include "horovod_plugin/boundary.h"
#include "transport.h"

namespace {

using hvd_plugin::fail;
using hvd_plugin::guarded;
using hvd_ucx::Connection;
using hvd_ucx::Listener;
using hvd_ucx::Request;
using hvd_ucx::Transport;

// A ucp_mem_map registration (none for an empty range).
struct Registration {
  Transport* transport;
  ucp_mem_h memh;
};

Transport* as_transport(hvd_transport* t) {
  if (t == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "ucx: transport is NULL");
  return reinterpret_cast<Transport*>(t);
}
Connection* as_conn(hvd_conn* c) {
  if (c == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "ucx: connection is NULL");
  return reinterpret_cast<Connection*>(c);
}
template <typename T>
void require(T* pointer, const char* what) {
  if (pointer == nullptr) {
    fail(HVD_ERR_INVALID_ARGUMENT, std::string("ucx: ") + what + " is NULL");
  }
}
ucp_mem_h memh_of(hvd_mr* mr) {
  return mr == nullptr ? nullptr : reinterpret_cast<Registration*>(mr)->memh;
}

hvd_status ucx_init(const hvd_host* host, hvd_transport** out) {
  return guarded([&] {
    require(out, "out");
    hvd_transport_common::check_host(host);
    *out = reinterpret_cast<hvd_transport*>(new Transport(host));
    return HVD_OK;
  });
}

hvd_status ucx_finalize(hvd_transport* t) {
  return guarded([&] {
    delete as_transport(t);
    return HVD_OK;
  });
}

hvd_status ucx_get_properties(hvd_transport* t,
                              hvd_transport_properties* props) {
  return guarded([&] {
    require(props, "properties");
    as_transport(t)->properties(props);
    return HVD_OK;
  });
}

const char* ucx_last_error(hvd_transport*) { return hvd_plugin::last_error(); }

hvd_status ucx_listen(hvd_transport* t, void* handle, hvd_listener** out) {
  return guarded([&] {
    require(handle, "handle");
    require(out, "out");
    Listener* l = nullptr;
    hvd_status s = as_transport(t)->listen(handle, &l);
    if (s == HVD_OK) *out = reinterpret_cast<hvd_listener*>(l);
    return s;
  });
}

hvd_status ucx_accept(hvd_listener* l, const hvd_conn_info* info,
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

hvd_status ucx_connect(hvd_transport* t, const void* handle,
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

hvd_status ucx_conn_test(hvd_conn* c) {
  return guarded([&] {
    Connection* conn = as_conn(c);
    return conn->transport().conn_test(conn);
  });
}

int32_t ucx_conn_peer(hvd_conn* c) {
  return c == nullptr ? -1 : reinterpret_cast<Connection*>(c)->peer_rank();
}

hvd_status ucx_conn_close(hvd_conn* c) {
  return guarded([&] {
    Connection* conn = as_conn(c);
    conn->transport().close_connection(conn);
    return HVD_OK;
  });
}

hvd_status ucx_listener_close(hvd_listener* l) {
  return guarded([&] {
    require(l, "listener");
    auto* listener = reinterpret_cast<Listener*>(l);
    listener->transport->close_listener(listener);
    return HVD_OK;
  });
}

hvd_status ucx_mr_reg(hvd_transport* t, void* buf, size_t bytes,
                      hvd_device device, hvd_mr** out) {
  return guarded([&] {
    Transport* transport = as_transport(t);
    require(out, "out");
    if (device.kind != HVD_MEM_HOST) {
      fail(HVD_ERR_UNSUPPORTED, "ucx: only host memory can be registered");
    }
    ucp_mem_h memh = nullptr;
    if (bytes > 0) {
      require(buf, "buffer");
      ucp_mem_map_params_t p{};
      p.field_mask =
          UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
      p.address = buf;
      p.length = bytes;
      ucs_status_t st = ucp_mem_map(transport->context(), &p, &memh);
      if (st != UCS_OK) hvd_ucx::fail_ucs("ucp_mem_map", st);
    }
    *out = reinterpret_cast<hvd_mr*>(new Registration{transport, memh});
    return HVD_OK;
  });
}

hvd_status ucx_mr_dereg(hvd_transport* t, hvd_mr* mr) {
  return guarded([&] {
    Transport* transport = as_transport(t);
    require(mr, "mr");
    auto* reg = reinterpret_cast<Registration*>(mr);
    ucs_status_t st = UCS_OK;
    if (reg->memh != nullptr)
      st = ucp_mem_unmap(transport->context(), reg->memh);
    delete reg;
    if (st != UCS_OK) hvd_ucx::fail_ucs("ucp_mem_unmap", st);
    return HVD_OK;
  });
}

hvd_status ucx_isend(hvd_conn* c, const void* buf, size_t bytes, uint64_t tag,
                     hvd_mr* mr, hvd_request** req) {
  return guarded([&] {
    require(req, "request");
    Connection* conn = as_conn(c);
    if (hvd_status a = conn->transport().aborted(); a != HVD_OK) {
      return hvd_plugin::refuse(a, "ucx: isend after abort");
    }
    Request* r = nullptr;
    hvd_status s = conn->isend(buf, bytes, tag, memh_of(mr), &r);
    if (s == HVD_OK) *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status ucx_irecv(hvd_conn* c, void* buf, size_t bytes, uint64_t tag,
                     hvd_mr* mr, hvd_request** req) {
  return guarded([&] {
    require(req, "request");
    Connection* conn = as_conn(c);
    if (hvd_status a = conn->transport().aborted(); a != HVD_OK) {
      return hvd_plugin::refuse(a, "ucx: irecv after abort");
    }
    Request* r = nullptr;
    hvd_status s = conn->irecv(buf, bytes, tag, memh_of(mr), &r);
    if (s == HVD_OK) *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status ucx_test(hvd_request* req, int32_t* done, hvd_completion* out) {
  return guarded([&] {
    require(req, "request");
    require(done, "done");
    auto* r = reinterpret_cast<Request*>(req);
    return r->transport->test(r, done, out);
  });
}

hvd_status ucx_progress(hvd_transport* t) {
  return guarded([&] {
    as_transport(t)->progress();
    return HVD_OK;
  });
}

int ucx_wait_fd(hvd_transport* t) {
  return t == nullptr ? -1 : reinterpret_cast<Transport*>(t)->wait_fd();
}

hvd_status ucx_wait_arm(hvd_transport* t) {
  return guarded([&] { return as_transport(t)->wait_arm(); });
}

hvd_status ucx_abort(hvd_transport* t, hvd_status reason, int32_t peer) {
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
    .name = "ucx",
    .version = "1.0",
    .init = ucx_init,
    .finalize = ucx_finalize,
    .get_properties = ucx_get_properties,
    .last_error = ucx_last_error,
    .listen = ucx_listen,
    .accept = ucx_accept,
    .connect = ucx_connect,
    .conn_test = ucx_conn_test,
    .conn_peer = ucx_conn_peer,
    .conn_close = ucx_conn_close,
    .listener_close = ucx_listener_close,
    .mr_reg = ucx_mr_reg,
    .mr_dereg = ucx_mr_dereg,
    .isend = ucx_isend,
    .irecv = ucx_irecv,
    .test = ucx_test,
    .progress = ucx_progress,
    .wait_fd = ucx_wait_fd,
    .wait_arm = ucx_wait_arm,
    .abort = ucx_abort,
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
