// The gloo transport's table: the shared entry points come from
// TransportTable; registration (none is needed), the data calls and the
// collectives extension are gloo's own.
#include <gloo/config.h>

#include <string>

#include "collectives.h"
#include "connection.h"
#include "horovod/transport.h"
#include "horovod_plugin/boundary.h"
#include "horovod_plugin/transport_table.h"
#include "transport.h"

namespace {

using hvd_plugin::fail;
using hvd_plugin::guarded;
using hvd_plugin::refuse;

struct Impl {
  using Transport = hvd_gloo::Transport;
  using Listener = hvd_gloo::Listener;
  using Connection = hvd_gloo::Connection;
  using Request = hvd_gloo::Request;
  static constexpr const char* kName = "gloo";
  // Calls from a waiting thread too, one at a time: no state kept in a thread between calls.
  static constexpr uint32_t kThreading = HVD_THREADING_SERIALIZED;
  static Transport& transport_of(Listener* l) { return *l->transport; }
  static Transport& transport_of(Connection* c) { return c->transport(); }
  static hvd_status conn_test(Connection* c) {
    return c->transport().conn_test(c);
  }
  static int32_t peer_rank(Connection* c) { return c->peer_rank(); }
};

using Table = hvd_plugin::TransportTable<Impl>;

// Gloo's TCP pairs send from any host memory: a registration is a token.
struct Registration {
  void* buf;
  size_t bytes;
};

hvd_status gloo_mr_reg(hvd_transport* t, void* buf, size_t bytes,
                       hvd_device device, hvd_mr** out) {
  return guarded([&] {
    Table::as_transport(t);
    Table::require(out, "out");
    if (device.kind != HVD_MEM_HOST) {
      fail(HVD_ERR_UNSUPPORTED, "gloo: only host memory can be registered");
    }
    *out = reinterpret_cast<hvd_mr*>(new Registration{buf, bytes});
    return HVD_OK;
  });
}

hvd_status gloo_mr_dereg(hvd_transport* t, hvd_mr* mr) {
  return guarded([&] {
    Table::as_transport(t);
    Table::require(mr, "mr");
    delete reinterpret_cast<Registration*>(mr);
    return HVD_OK;
  });
}

template <typename Post>
hvd_status data_call(hvd_conn* c, hvd_request** req, const char* what,
                     Post&& post) {
  return guarded([&] {
    Table::require(req, "request");
    hvd_gloo::Connection* conn = Table::as_conn(c);
    hvd_plugin::fault::fault_point(conn->transport());
    int32_t peer = -1;
    if (hvd_status a = conn->transport().aborted(&peer); a != HVD_OK) {
      return refuse(a, std::string("gloo: ") + what + " after abort");
    }
    hvd_gloo::Request* r = nullptr;
    hvd_status s = post(conn, &r);
    if (s == HVD_OK) {
      *req = reinterpret_cast<hvd_request*>(r);
    } else if (s == HVD_ERR_INVALID_ARGUMENT) {
      return refuse(s, std::string("gloo: ") + what +
                           " on a connection that is not established");
    } else if (s != HVD_AGAIN) {
      return refuse(s, std::string("gloo: ") + what + " on the connection " +
                           "with rank " + std::to_string(conn->peer_rank()) +
                           ", which has failed");
    }
    return s;
  });
}

hvd_status gloo_isend(hvd_conn* c, const void* buf, size_t bytes, uint64_t tag,
                      hvd_mr*, hvd_request** req) {
  return data_call(c, req, "isend",
                   [&](hvd_gloo::Connection* conn, hvd_gloo::Request** r) {
                     if (bytes > 0) Table::require(buf, "buffer");
                     return conn->isend(buf, bytes, tag, r);
                   });
}

hvd_status gloo_irecv(hvd_conn* c, void* buf, size_t bytes, uint64_t tag,
                      hvd_mr*, hvd_request** req) {
  return data_call(c, req, "irecv",
                   [&](hvd_gloo::Connection* conn, hvd_gloo::Request** r) {
                     if (bytes > 0) Table::require(buf, "buffer");
                     return conn->irecv(buf, bytes, tag, r);
                   });
}

const char* describe() {
  static const std::string text =
      "Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." +
      std::to_string(GLOO_VERSION_MINOR) + "." +
      std::to_string(GLOO_VERSION_PATCH) +
      "; TCP pairs and Gloo's allreduce, allgatherv, broadcast, alltoallv";
  return text.c_str();
}

const hvd_transport_api kApi =
    Table::api({gloo_mr_reg, gloo_mr_dereg, gloo_isend, gloo_irecv},
               {.describe = describe, .collectives = &hvd_gloo::kCollectives});

}  // namespace

extern "C" HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(
    uint32_t core_major, uint32_t) {
  return core_major == HVD_ABI_VERSION_MAJOR ? &kApi : nullptr;
}
