#include "collectives.h"

#include "comm.h"
#include "horovod_plugin/boundary.h"
#include "horovod_plugin/enums.h"
#include "horovod_plugin/fault_hook.h"
#include "transport.h"

namespace hvd_shm {
namespace {

using hvd_plugin::fail;
using hvd_plugin::guarded;

Comm* as_comm(hvd_coll_comm* comm) {
  if (comm == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "shm: comm is NULL");
  return reinterpret_cast<Comm*>(comm);
}

template <typename Post>
hvd_status post(hvd_coll_comm* comm, hvd_request** req, Post&& body) {
  return guarded([&] {
    if (req == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "shm: req is NULL");
    Comm& c = *as_comm(comm);
    hvd_plugin::fault::fault_point(c.transport());
    Request* r = nullptr;
    hvd_status s = body(c, &r);
    if (s == HVD_OK) *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status comm_create(hvd_transport* t, const hvd_team* team,
                       hvd_coll_comm** out) {
  return guarded([&] {
    if (t == nullptr || team == nullptr || out == nullptr ||
        team->world_ranks == nullptr || team->size < 1 || team->rank < 0 ||
        team->rank >= team->size) {
      fail(HVD_ERR_INVALID_ARGUMENT, "shm: comm_create: bad arguments");
    }
    Comm* comm = nullptr;
    hvd_status s = reinterpret_cast<Transport*>(t)->comm_create(*team, &comm);
    if (s == HVD_OK) *out = reinterpret_cast<hvd_coll_comm*>(comm);
    return s;
  });
}

hvd_status comm_destroy(hvd_coll_comm* comm) {
  return guarded([&] {
    Comm* c = as_comm(comm);
    c->transport().comm_destroy(c);
    return HVD_OK;
  });
}

int32_t supports(hvd_coll_comm*, hvd_collective coll, hvd_dtype dtype,
                 hvd_reduce_op op, hvd_mem_kind mem) {
  if (mem != HVD_MEM_HOST || hvd_plugin::dtype_size(dtype) == 0) return 0;
  switch (coll) {
    case HVD_COLL_ALLREDUCE:
      return op == HVD_OP_SUM || op == HVD_OP_MIN || op == HVD_OP_MAX ||
             op == HVD_OP_PRODUCT;
    case HVD_COLL_ALLGATHER:
    case HVD_COLL_BROADCAST:
    case HVD_COLL_BARRIER:
      return 1;
    default:
      return 0;
  }
}

hvd_status allreduce(hvd_coll_comm* comm, const void* send, void* recv,
                     size_t count, hvd_dtype dtype, hvd_reduce_op op,
                     hvd_stream, hvd_request** req) {
  return post(comm, req, [&](Comm& c, Request** r) {
    if (!supports(comm, HVD_COLL_ALLREDUCE, dtype, op, HVD_MEM_HOST)) {
      return hvd_plugin::refuse(HVD_ERR_UNSUPPORTED,
                                std::string("shm: no native allreduce for ") +
                                    hvd_plugin::op_name(op));
    }
    return c.allreduce(send, recv, count, dtype, op, r);
  });
}

hvd_status allgatherv(hvd_coll_comm* comm, const void* send, size_t send_count,
                      void* recv, const size_t* recv_counts,
                      const size_t* recv_displs, hvd_dtype dtype, hvd_stream,
                      hvd_request** req) {
  return post(comm, req, [&](Comm& c, Request** r) {
    return c.allgatherv(send, send_count, recv, recv_counts, recv_displs, dtype,
                        r);
  });
}

hvd_status broadcast(hvd_coll_comm* comm, void* buf, size_t count,
                     hvd_dtype dtype, int32_t root, hvd_stream,
                     hvd_request** req) {
  return post(comm, req, [&](Comm& c, Request** r) {
    return c.broadcast(buf, count, dtype, root, r);
  });
}

hvd_status reducescatter(hvd_coll_comm*, const void*, void*, const size_t*,
                         hvd_dtype, hvd_reduce_op, hvd_stream, hvd_request**) {
  return HVD_ERR_UNSUPPORTED;
}

hvd_status alltoallv(hvd_coll_comm*, const void*, const size_t*, const size_t*,
                     void*, const size_t*, const size_t*, hvd_dtype, hvd_stream,
                     hvd_request**) {
  return HVD_ERR_UNSUPPORTED;
}

hvd_status barrier(hvd_coll_comm* comm, hvd_request** req) {
  return post(comm, req, [&](Comm& c, Request** r) { return c.barrier(r); });
}

hvd_status comm_abort(hvd_coll_comm* comm, hvd_status reason, int32_t peer) {
  if (comm == nullptr) return HVD_ERR_INVALID_ARGUMENT;
  reinterpret_cast<Comm*>(comm)->abort(reason, peer);
  return HVD_OK;
}

}  // namespace

const hvd_transport_collectives kCollectives = {
    sizeof(hvd_transport_collectives),
    HVD_EXT_TRANSPORT_COLLECTIVES,
    nullptr,
    comm_create,
    comm_destroy,
    supports,
    allreduce,
    allgatherv,
    broadcast,
    reducescatter,
    alltoallv,
    barrier,
    comm_abort};

}  // namespace hvd_shm
