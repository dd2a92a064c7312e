// The ofi transport's table: the shared entry points come from
// TransportTable; what is ofi's own (memory registration, the data calls
// and how its objects reach their transport) is written here.
#include "fabric_info.h"
#include "horovod/transport.h"
#include "horovod_plugin/boundary.h"
#include "horovod_plugin/transport_table.h"
#include "transport.h"

namespace {

using hvd_ofi::Connection;
using hvd_ofi::Listener;
using hvd_ofi::Registration;
using hvd_ofi::Request;
using hvd_ofi::Transport;
using hvd_plugin::fail;
using hvd_plugin::guarded;

struct Impl {
  using Transport = hvd_ofi::Transport;
  using Listener = hvd_ofi::Listener;
  using Connection = hvd_ofi::Connection;
  using Request = hvd_ofi::Request;
  static constexpr const char* kName = "ofi";
  // Calls from a waiting thread too, one at a time: no state kept in a thread between calls.
  static constexpr uint32_t kThreading = HVD_THREADING_SERIALIZED;
  static Transport& transport_of(Listener* l) { return *l->transport; }
  static Transport& transport_of(Connection* c) { return *c->transport; }
  static hvd_status conn_test(Connection* c) {
    return c->transport->conn_test(c);
  }
  static int32_t peer_rank(Connection* c) { return c->peer_rank; }
};

using Table = hvd_plugin::TransportTable<Impl>;

hvd_status ofi_mr_reg(hvd_transport* t, void* buf, size_t bytes,
                      hvd_device device, hvd_mr** out) {
  return guarded([&] {
    Transport* transport = Table::as_transport(t);
    Table::require(out, "out");
    *out = reinterpret_cast<hvd_mr*>(transport->mr_reg(buf, bytes, device));
    return HVD_OK;
  });
}

hvd_status ofi_mr_dereg(hvd_transport* t, hvd_mr* mr) {
  return guarded([&] {
    Transport* transport = Table::as_transport(t);
    Table::require(mr, "mr");
    transport->mr_dereg(reinterpret_cast<Registration*>(mr));
    return HVD_OK;
  });
}

hvd_status ofi_isend(hvd_conn* c, const void* buf, size_t bytes, uint64_t tag,
                     hvd_mr* mr, hvd_request** req) {
  return Table::post_request(c, req, [&](Connection* conn, Request** r) {
    return conn->transport->isend(conn, buf, bytes, tag,
                                  reinterpret_cast<Registration*>(mr), r);
  });
}

hvd_status ofi_irecv(hvd_conn* c, void* buf, size_t bytes, uint64_t tag,
                     hvd_mr* mr, hvd_request** req) {
  return Table::post_request(c, req, [&](Connection* conn, Request** r) {
    return conn->transport->irecv(conn, buf, bytes, tag,
                                  reinterpret_cast<Registration*>(mr), r);
  });
}

const hvd_transport_api kApi =
    Table::api({ofi_mr_reg, ofi_mr_dereg, ofi_isend, ofi_irecv},
               {.describe = hvd_ofi::describe_fabric});

}  // namespace

extern "C" HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(
    uint32_t core_major, uint32_t) {
  return core_major == HVD_ABI_VERSION_MAJOR ? &kApi : nullptr;
}
