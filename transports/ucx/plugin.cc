// The ucx transport's table: the shared entry points come from
// TransportTable; what is ucx's own (memory registration, the data calls
// and how its objects reach their transport) is written here.
#include "connection.h"
#include "fabric_info.h"
#include "horovod/transport.h"
#include "horovod_plugin/boundary.h"
#include "horovod_plugin/transport_table.h"
#include "transport.h"

namespace {

using hvd_plugin::fail;
using hvd_plugin::guarded;
using hvd_ucx::Connection;
using hvd_ucx::Listener;
using hvd_ucx::Request;
using hvd_ucx::Transport;

struct Impl {
  using Transport = hvd_ucx::Transport;
  using Listener = hvd_ucx::Listener;
  using Connection = hvd_ucx::Connection;
  using Request = hvd_ucx::Request;
  static constexpr const char* kName = "ucx";
  // Calls from a waiting thread too, one at a time: its worker is UCS_THREAD_MODE_SERIALIZED.
  static constexpr uint32_t kThreading = HVD_THREADING_SERIALIZED;
  static Transport& transport_of(Listener* l) { return *l->transport; }
  static Transport& transport_of(Connection* c) { return c->transport(); }
  static hvd_status conn_test(Connection* c) {
    return c->transport().conn_test(c);
  }
  static int32_t peer_rank(Connection* c) { return c->peer_rank(); }
};

using Table = hvd_plugin::TransportTable<Impl>;

// A ucp_mem_map registration (none for an empty range).
struct Registration {
  Transport* transport;
  ucp_mem_h memh;
};

ucp_mem_h memh_of(hvd_mr* mr) {
  return mr == nullptr ? nullptr : reinterpret_cast<Registration*>(mr)->memh;
}

hvd_status ucx_mr_reg(hvd_transport* t, void* buf, size_t bytes,
                      hvd_device device, hvd_mr** out) {
  return guarded([&] {
    Transport* transport = Table::as_transport(t);
    Table::require(out, "out");
    if (device.kind != HVD_MEM_HOST) {
      fail(HVD_ERR_UNSUPPORTED, "ucx: only host memory can be registered");
    }
    ucp_mem_h memh = nullptr;
    if (bytes > 0) {
      Table::require(buf, "buffer");
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
    Transport* transport = Table::as_transport(t);
    Table::require(mr, "mr");
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
    Table::require(req, "request");
    Connection* conn = Table::as_conn(c);
    hvd_plugin::fault::fault_point(conn->transport());
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
    Table::require(req, "request");
    Connection* conn = Table::as_conn(c);
    hvd_plugin::fault::fault_point(conn->transport());
    if (hvd_status a = conn->transport().aborted(); a != HVD_OK) {
      return hvd_plugin::refuse(a, "ucx: irecv after abort");
    }
    Request* r = nullptr;
    hvd_status s = conn->irecv(buf, bytes, tag, memh_of(mr), &r);
    if (s == HVD_OK) *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

const hvd_transport_api kApi =
    Table::api({ucx_mr_reg, ucx_mr_dereg, ucx_isend, ucx_irecv},
               {.describe = hvd_ucx::describe_fabric});

}  // namespace

extern "C" HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(
    uint32_t core_major, uint32_t) {
  return core_major == HVD_ABI_VERSION_MAJOR ? &kApi : nullptr;
}
