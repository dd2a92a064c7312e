// The tcp transport's table: the shared entry points come from
// TransportTable; what is tcp's own (memory registration, the data calls
// and how its objects reach their transport) is written here.
#include "connection.h"
#include "horovod/transport.h"
#include "horovod_plugin/boundary.h"
#include "horovod_plugin/transport_table.h"
#include "listener.h"
#include "transport.h"

namespace {

using hvd_plugin::fail;
using hvd_plugin::guarded;
using hvd_tcp::Connection;
using hvd_tcp::Listener;
using hvd_tcp::Request;
using hvd_tcp::Transport;

struct Impl {
  using Transport = hvd_tcp::Transport;
  using Listener = hvd_tcp::Listener;
  using Connection = hvd_tcp::Connection;
  using Request = hvd_tcp::Request;
  static constexpr const char* kName = "tcp";
  // Calls from a waiting thread too, one at a time: no state kept in a thread between calls.
  static constexpr uint32_t kThreading = HVD_THREADING_SERIALIZED;
  static Transport& transport_of(Listener* l) { return l->transport(); }
  static Transport& transport_of(Connection* c) { return c->transport(); }
  static hvd_status conn_test(Connection* c) { return c->handshake(); }
  static int32_t peer_rank(Connection* c) { return c->peer_rank(); }
};

using Table = hvd_plugin::TransportTable<Impl>;

// tcp needs no registration; a region only remembers its range.
struct Registration {
  void* buf;
  size_t bytes;
};

hvd_status tcp_mr_reg(hvd_transport* t, void* buf, size_t bytes,
                      hvd_device device, hvd_mr** out) {
  return guarded([&] {
    Table::as_transport(t);
    Table::require(out, "out");
    if (device.kind != HVD_MEM_HOST) {
      fail(HVD_ERR_UNSUPPORTED, "tcp: only host memory can be sent");
    }
    *out = reinterpret_cast<hvd_mr*>(new Registration{buf, bytes});
    return HVD_OK;
  });
}

hvd_status tcp_mr_dereg(hvd_transport* t, hvd_mr* mr) {
  return guarded([&] {
    Table::as_transport(t);
    Table::require(mr, "mr");
    delete reinterpret_cast<Registration*>(mr);
    return HVD_OK;
  });
}

hvd_status tcp_isend(hvd_conn* c, const void* buf, size_t bytes, uint64_t tag,
                     hvd_mr*, hvd_request** req) {
  return Table::post_request(c, req, [&](Connection* conn, Request** r) {
    return conn->isend(buf, bytes, tag, r);
  });
}

hvd_status tcp_irecv(hvd_conn* c, void* buf, size_t bytes, uint64_t tag,
                     hvd_mr*, hvd_request** req) {
  return Table::post_request(c, req, [&](Connection* conn, Request** r) {
    return conn->irecv(buf, bytes, tag, r);
  });
}

constexpr hvd_transport_api kApi =
    Table::api({tcp_mr_reg, tcp_mr_dereg, tcp_isend, tcp_irecv});

}  // namespace

extern "C" HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(
    uint32_t core_major, uint32_t) {
  return core_major == HVD_ABI_VERSION_MAJOR ? &kApi : nullptr;
}
