// The mpi transport's table: the shared entry points come from
// TransportTable; the data calls, the native collectives and what the
// plugin tells horovod-info are added here.
#include <string>

#include "collectives.h"
#include "horovod/transport.h"
#include "horovod_plugin/boundary.h"
#include "horovod_plugin/transport_table.h"
#include "library.h"
#include "transport.h"

namespace {

using hvd_plugin::fail;
using hvd_plugin::guarded;

struct Impl {
  using Transport = hvd_mpi::Transport;
  using Listener = hvd_mpi::Listener;
  using Connection = hvd_mpi::Connection;
  using Request = hvd_mpi::Request;
  static constexpr const char* kName = "mpi";
  // Calls from a waiting thread too, one at a time: MPI is initialised with MPI_THREAD_SERIALIZED.
  static constexpr uint32_t kThreading = HVD_THREADING_SERIALIZED;
  static Transport& transport_of(Listener* l) { return *l->transport; }
  static Transport& transport_of(Connection* c) { return *c->transport; }
  static hvd_status conn_test(Connection* c) {
    return c->transport->conn_test(c);
  }
  static int32_t peer_rank(Connection* c) { return c->peer_rank; }
};

using Table = hvd_plugin::TransportTable<Impl>;

// MPI needs no registration: a dummy that is never looked at.
hvd_status mpi_mr_reg(hvd_transport* t, void*, size_t, hvd_device device,
                      hvd_mr** out) {
  return guarded([&] {
    Table::as_transport(t);
    Table::require(out, "out");
    if (device.kind != HVD_MEM_HOST) {
      fail(HVD_ERR_UNSUPPORTED, "mpi: only host memory can be registered");
    }
    *out = reinterpret_cast<hvd_mr*>(t);
    return HVD_OK;
  });
}

hvd_status mpi_mr_dereg(hvd_transport* t, hvd_mr* mr) {
  return guarded([&] {
    Table::as_transport(t);
    Table::require(mr, "mr");
    return HVD_OK;
  });
}

hvd_status mpi_isend(hvd_conn* c, const void* buf, size_t bytes, uint64_t tag,
                     hvd_mr*, hvd_request** req) {
  return Table::post_request(
      c, req, [&](hvd_mpi::Connection* conn, hvd_mpi::Request** r) {
        return conn->transport->isend(conn, buf, bytes, tag, r);
      });
}

hvd_status mpi_irecv(hvd_conn* c, void* buf, size_t bytes, uint64_t tag,
                     hvd_mr*, hvd_request** req) {
  return Table::post_request(
      c, req, [&](hvd_mpi::Connection* conn, hvd_mpi::Request** r) {
        return conn->transport->irecv(conn, buf, bytes, tag, r);
      });
}

const char* describe() {
  static const std::string text = [] {
    int major = 0, minor = 0;
    MPI_Get_version(&major, &minor);
    return hvd_mpi::Library::library_version() + " (MPI " +
           std::to_string(major) + "." + std::to_string(minor) +
           "); native allreduce, allgatherv, bcast, reduce_scatter, "
           "alltoallv";
  }();
  return text.c_str();
}

hvd_transport_api make_table() {
  hvd_transport_api api =
      Table::api({mpi_mr_reg, mpi_mr_dereg, mpi_isend, mpi_irecv},
                 {.describe = describe, .collectives = &hvd_mpi::kCollectives});
  // MPI has no descriptor to sleep on; the core naps between tests.
  api.wait_fd = nullptr;
  api.wait_arm = nullptr;
  return api;
}

}  // namespace

extern "C" HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(
    uint32_t core_major, uint32_t) {
  static const hvd_transport_api table = make_table();
  return core_major == HVD_ABI_VERSION_MAJOR ? &table : nullptr;
}
