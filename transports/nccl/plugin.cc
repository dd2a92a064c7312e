// The nccl transport's table. NCCL moves CUDA memory through its
// collectives, offered on the collectives extension; the point-to-point
// calls of the transport ABI answer HVD_ERR_UNSUPPORTED (the core reaches
// GPU memory over its host transports or through these collectives).
#include <nccl.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "comm.h"
#include "common/host_access.h"
#include "horovod/transport.h"
#include "horovod_plugin/boundary.h"
#include "horovod_plugin/extension_chain.h"
#include "transport.h"

namespace {

using hvd_nccl::Comm;
using hvd_nccl::Request;
using hvd_nccl::Transport;
using hvd_plugin::fail;
using hvd_plugin::guarded;
using hvd_plugin::refuse;

Transport* as_transport(hvd_transport* t) {
  if (t == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "nccl: transport is NULL");
  return reinterpret_cast<Transport*>(t);
}

Comm* as_comm(hvd_coll_comm* c) {
  if (c == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "nccl: comm is NULL");
  return reinterpret_cast<Comm*>(c);
}

hvd_status no_p2p(const char* what) {
  return refuse(HVD_ERR_UNSUPPORTED,
                std::string("nccl: ") + what +
                    ": the nccl transport moves data through its "
                    "collectives only (the collectives extension)");
}

// ---- lifecycle ------------------------------------------------------------

hvd_status nccl_init(const hvd_host* host, hvd_transport** out) {
  return guarded([&] {
    if (out == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "nccl: out is NULL");
    hvd_transport_common::check_host(host);
    *out = reinterpret_cast<hvd_transport*>(new Transport(host));
    return HVD_OK;
  });
}

hvd_status nccl_finalize(hvd_transport* t) {
  return guarded([&] {
    delete as_transport(t);
    return HVD_OK;
  });
}

hvd_status nccl_get_properties(hvd_transport* t,
                               hvd_transport_properties* props) {
  return guarded([&] {
    if (props == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "nccl: props NULL");
    as_transport(t)->properties(props);
    return HVD_OK;
  });
}

const char* nccl_last_error(hvd_transport*) { return hvd_plugin::last_error(); }

// ---- point to point: not offered --------------------------------------------

hvd_status nccl_listen(hvd_transport*, void*, hvd_listener**) {
  return no_p2p("listen");
}
hvd_status nccl_accept(hvd_listener*, const hvd_conn_info*, hvd_conn**) {
  return no_p2p("accept");
}
hvd_status nccl_connect(hvd_transport*, const void*, const hvd_conn_info*,
                        hvd_conn**) {
  return no_p2p("connect");
}
hvd_status nccl_conn_test(hvd_conn*) { return no_p2p("conn_test"); }
int32_t nccl_conn_peer(hvd_conn*) { return -1; }
hvd_status nccl_conn_close(hvd_conn*) { return no_p2p("conn_close"); }
hvd_status nccl_listener_close(hvd_listener*) {
  return no_p2p("listener_close");
}
hvd_status nccl_isend(hvd_conn*, const void*, size_t, uint64_t, hvd_mr*,
                      hvd_request**) {
  return no_p2p("isend");
}
hvd_status nccl_irecv(hvd_conn*, void*, size_t, uint64_t, hvd_mr*,
                      hvd_request**) {
  return no_p2p("irecv");
}

// Device memory needs no registration for NCCL's collectives.
struct Registration {
  void* buf;
};

hvd_status nccl_mr_reg(hvd_transport* t, void* buf, size_t, hvd_device device,
                       hvd_mr** out) {
  return guarded([&] {
    as_transport(t);
    if (out == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "nccl: out is NULL");
    if (device.kind != HVD_MEM_CUDA) {
      fail(HVD_ERR_UNSUPPORTED, "nccl: only CUDA memory");
    }
    *out = reinterpret_cast<hvd_mr*>(new Registration{buf});
    return HVD_OK;
  });
}

hvd_status nccl_mr_dereg(hvd_transport* t, hvd_mr* mr) {
  return guarded([&] {
    as_transport(t);
    delete reinterpret_cast<Registration*>(mr);
    return HVD_OK;
  });
}

hvd_status nccl_test(hvd_request* req, int32_t* done, hvd_completion* out) {
  return guarded([&] {
    if (req == nullptr || done == nullptr) {
      fail(HVD_ERR_INVALID_ARGUMENT, "nccl: test: NULL argument");
    }
    auto* r = reinterpret_cast<Request*>(req);
    return r->comm->test(r, done, out);
  });
}

int nccl_wait_fd(hvd_transport* t) {
  return t == nullptr ? -1 : reinterpret_cast<Transport*>(t)->waker()->fd();
}

hvd_status nccl_wait_arm(hvd_transport* t) {
  return guarded([&] { return as_transport(t)->wait_arm(); });
}

hvd_status nccl_abort(hvd_transport* t, hvd_status reason, int32_t peer) {
  return guarded([&] {
    as_transport(t)->abort(reason, peer);
    return HVD_OK;
  });
}

// ---- collectives
// --------------------------------------------------------------

bool nccl_type(hvd_dtype dtype, ncclDataType_t* out, size_t* size) {
  switch (dtype) {
    case HVD_UINT8:
    case HVD_BOOL:
      *out = ncclUint8;
      *size = 1;
      return true;
    case HVD_INT8:
      *out = ncclInt8;
      *size = 1;
      return true;
    case HVD_INT32:
      *out = ncclInt32;
      *size = 4;
      return true;
    case HVD_INT64:
      *out = ncclInt64;
      *size = 8;
      return true;
    case HVD_FLOAT16:
      *out = ncclFloat16;
      *size = 2;
      return true;
    case HVD_BFLOAT16:
      *out = ncclBfloat16;
      *size = 2;
      return true;
    case HVD_FLOAT32:
      *out = ncclFloat32;
      *size = 4;
      return true;
    case HVD_FLOAT64:
      *out = ncclFloat64;
      *size = 8;
      return true;
  }
  return false;
}

// Byte-wise moves (gathers, broadcasts, all-to-all) take any dtype.
size_t element_size(hvd_dtype dtype) {
  ncclDataType_t t;
  size_t size = 0;
  if (nccl_type(dtype, &t, &size)) return size;
  return dtype == HVD_UINT16 || dtype == HVD_INT16 ? 2 : 0;
}

bool nccl_op(hvd_reduce_op op, hvd_dtype dtype, ncclRedOp_t* out) {
  if (dtype == HVD_BOOL) return false;  // a sum of bools is not "or"
  switch (op) {
    case HVD_OP_SUM:
      *out = ncclSum;
      return true;
    case HVD_OP_AVERAGE:
      *out = ncclAvg;
      return true;
    case HVD_OP_MIN:
      *out = ncclMin;
      return true;
    case HVD_OP_MAX:
      *out = ncclMax;
      return true;
    case HVD_OP_PRODUCT:
      *out = ncclProd;
      return true;
  }
  return false;
}

void reduction(hvd_dtype dtype, hvd_reduce_op op, ncclDataType_t* type,
               ncclRedOp_t* nop) {
  size_t size = 0;
  if (!nccl_type(dtype, type, &size) || !nccl_op(op, dtype, nop)) {
    fail(HVD_ERR_UNSUPPORTED, "nccl: no NCCL reduction for this dtype and op");
  }
}

size_t bytes_of(size_t count, hvd_dtype dtype) {
  size_t size = element_size(dtype);
  if (size == 0) fail(HVD_ERR_UNSUPPORTED, "nccl: dtype not supported");
  return count * size;
}

const char* at(const void* base, size_t elements, size_t esize) {
  return static_cast<const char*>(base) + elements * esize;
}

hvd_status nccl_comm_create(hvd_transport* t, const hvd_team* team,
                            hvd_coll_comm** out) {
  return guarded([&]() -> hvd_status {
    if (team == nullptr || out == nullptr) {
      fail(HVD_ERR_INVALID_ARGUMENT, "nccl: comm_create: NULL argument");
    }
    Transport* transport = as_transport(t);
    Comm* comm = transport->pending_comm(*team);
    hvd_status s = HVD_AGAIN;
    try {
      s = comm->step();
    } catch (...) {
      transport->comms().forget_pending(comm);
      delete comm;
      throw;
    }
    if (s == HVD_AGAIN) return HVD_AGAIN;
    transport->comms().forget_pending(comm);
    if (s != HVD_OK) {
      std::string why = hvd_plugin::last_error();
      delete comm;
      return refuse(s, why);
    }
    *out = reinterpret_cast<hvd_coll_comm*>(comm);
    return HVD_OK;
  });
}

hvd_status nccl_comm_destroy(hvd_coll_comm* c) {
  return guarded([&] {
    delete as_comm(c);
    return HVD_OK;
  });
}

int32_t nccl_supports(hvd_coll_comm*, hvd_collective coll, hvd_dtype dtype,
                      hvd_reduce_op op, hvd_mem_kind mem) {
  if (mem != HVD_MEM_CUDA) return 0;
  ncclDataType_t type;
  ncclRedOp_t nop;
  size_t size = 0;
  switch (coll) {
    case HVD_COLL_ALLREDUCE:
    case HVD_COLL_REDUCESCATTER:
      return nccl_type(dtype, &type, &size) && nccl_op(op, dtype, &nop) ? 1 : 0;
    case HVD_COLL_ALLGATHER:
    case HVD_COLL_BROADCAST:
    case HVD_COLL_ALLTOALL:
      return element_size(dtype) != 0 ? 1 : 0;
    case HVD_COLL_BARRIER:
      return 1;
  }
  return 0;
}

hvd_status nccl_allreduce(hvd_coll_comm* c, const void* send, void* recv,
                          size_t count, hvd_dtype dtype, hvd_reduce_op op,
                          hvd_stream stream, hvd_request** req) {
  return guarded([&] {
    ncclDataType_t type;
    ncclRedOp_t nop;
    reduction(dtype, op, &type, &nop);
    Request* r = nullptr;
    hvd_status s = as_comm(c)->post(
        stream, bytes_of(count, dtype),
        [&](ncclComm_t comm, cudaStream_t st) {
          return ncclAllReduce(send, recv, count, type, nop, comm, st);
        },
        &r);
    *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status nccl_allgatherv(hvd_coll_comm* c, const void* send,
                           size_t send_count, void* recv,
                           const size_t* recv_counts, const size_t* recv_displs,
                           hvd_dtype dtype, hvd_stream stream,
                           hvd_request** req) {
  return guarded([&] {
    Comm* comm = as_comm(c);
    const int n = comm->size();
    const size_t esize = element_size(dtype);
    if (esize == 0) fail(HVD_ERR_UNSUPPORTED, "nccl: dtype not supported");
    bool uniform = true;
    size_t total = 0;
    for (int p = 0; p < n; ++p) {
      uniform = uniform && recv_counts[p] == recv_counts[0] &&
                (recv_displs == nullptr || recv_displs[p] == total);
      total += recv_counts[p];
    }
    Request* r = nullptr;
    hvd_status s = comm->post(
        stream, total * esize,
        [&](ncclComm_t nc, cudaStream_t st) -> ncclResult_t {
          if (uniform) {
            return ncclAllGather(send, recv, send_count * esize, ncclUint8, nc,
                                 st);
          }
          // Blocks of different sizes: every rank broadcasts its own.
          ncclResult_t res = ncclGroupStart();
          size_t displ = 0;
          for (int p = 0; p < n && res == ncclSuccess; ++p) {
            size_t d = recv_displs != nullptr ? recv_displs[p] : displ;
            displ += recv_counts[p];
            res = ncclBroadcast(p == comm->rank() ? send : nullptr,
                                const_cast<char*>(at(recv, d, esize)),
                                recv_counts[p] * esize, ncclUint8, p, nc, st);
          }
          ncclResult_t end = ncclGroupEnd();
          return res != ncclSuccess ? res : end;
        },
        &r);
    *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status nccl_broadcast(hvd_coll_comm* c, void* buf, size_t count,
                          hvd_dtype dtype, int32_t root, hvd_stream stream,
                          hvd_request** req) {
  return guarded([&] {
    size_t bytes = bytes_of(count, dtype);
    Request* r = nullptr;
    hvd_status s = as_comm(c)->post(
        stream, bytes,
        [&](ncclComm_t nc, cudaStream_t st) {
          return ncclBroadcast(buf, buf, bytes, ncclUint8, root, nc, st);
        },
        &r);
    *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status nccl_reducescatter(hvd_coll_comm* c, const void* send, void* recv,
                              const size_t* recv_counts, hvd_dtype dtype,
                              hvd_reduce_op op, hvd_stream stream,
                              hvd_request** req) {
  return guarded([&] {
    Comm* comm = as_comm(c);
    ncclDataType_t type;
    ncclRedOp_t nop;
    reduction(dtype, op, &type, &nop);
    const int n = comm->size();
    const size_t esize = element_size(dtype);
    bool uniform = true;
    for (int p = 0; p < n; ++p)
      uniform = uniform && recv_counts[p] == recv_counts[0];
    Request* r = nullptr;
    hvd_status s = comm->post(
        stream, recv_counts[comm->rank()] * esize,
        [&](ncclComm_t nc, cudaStream_t st) -> ncclResult_t {
          if (uniform) {
            return ncclReduceScatter(send, recv, recv_counts[0], type, nop, nc,
                                     st);
          }
          // Blocks of different sizes: a reduce to each block's owner.
          ncclResult_t res = ncclGroupStart();
          size_t offset = 0;
          for (int p = 0; p < n && res == ncclSuccess; ++p) {
            res = ncclReduce(at(send, offset, esize),
                             p == comm->rank() ? recv : nullptr, recv_counts[p],
                             type, nop, p, nc, st);
            offset += recv_counts[p];
          }
          ncclResult_t end = ncclGroupEnd();
          return res != ncclSuccess ? res : end;
        },
        &r);
    *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status nccl_alltoallv(hvd_coll_comm* c, const void* send,
                          const size_t* send_counts, const size_t* send_displs,
                          void* recv, const size_t* recv_counts,
                          const size_t* recv_displs, hvd_dtype dtype,
                          hvd_stream stream, hvd_request** req) {
  return guarded([&] {
    Comm* comm = as_comm(c);
    const int n = comm->size();
    const size_t esize = element_size(dtype);
    if (esize == 0) fail(HVD_ERR_UNSUPPORTED, "nccl: dtype not supported");
    size_t received = 0;
    for (int p = 0; p < n; ++p) received += recv_counts[p];
    Request* r = nullptr;
    hvd_status s = comm->post(
        stream, received * esize,
        [&](ncclComm_t nc, cudaStream_t st) -> ncclResult_t {
          ncclResult_t res = ncclGroupStart();
          size_t so = 0, ro = 0;
          for (int p = 0; p < n && res == ncclSuccess; ++p) {
            size_t sd = send_displs != nullptr ? send_displs[p] : so;
            size_t rd = recv_displs != nullptr ? recv_displs[p] : ro;
            so += send_counts[p];
            ro += recv_counts[p];
            if (send_counts[p] > 0) {
              res = ncclSend(at(send, sd, esize), send_counts[p] * esize,
                             ncclUint8, p, nc, st);
            }
            if (res == ncclSuccess && recv_counts[p] > 0) {
              res = ncclRecv(const_cast<char*>(at(recv, rd, esize)),
                             recv_counts[p] * esize, ncclUint8, p, nc, st);
            }
          }
          ncclResult_t end = ncclGroupEnd();
          return res != ncclSuccess ? res : end;
        },
        &r);
    *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status nccl_barrier(hvd_coll_comm* c, hvd_request** req) {
  return guarded([&] {
    Comm* comm = as_comm(c);
    void* buf = comm->barrier_buffer();
    Request* r = nullptr;
    hvd_status s = comm->post(
        nullptr, 0,
        [&](ncclComm_t nc, cudaStream_t st) {
          return ncclAllReduce(buf, buf, 1, ncclFloat32, ncclSum, nc, st);
        },
        &r);
    *req = reinterpret_cast<hvd_request*>(r);
    return s;
  });
}

hvd_status nccl_comm_abort(hvd_coll_comm* c, hvd_status reason, int32_t peer) {
  return guarded([&] {
    as_comm(c)->abort(reason, peer);
    return HVD_OK;
  });
}

hvd_transport_collectives make_collectives() {
  hvd_transport_collectives t{};
  t.struct_size = HVD_STRUCT_SIZE(hvd_transport_collectives, comm_abort);
  t.type = HVD_EXT_TRANSPORT_COLLECTIVES;
  t.next = nullptr;
  t.comm_create = nccl_comm_create;
  t.comm_destroy = nccl_comm_destroy;
  t.supports = nccl_supports;
  t.allreduce = nccl_allreduce;
  t.allgatherv = nccl_allgatherv;
  t.broadcast = nccl_broadcast;
  t.reducescatter = nccl_reducescatter;
  t.alltoallv = nccl_alltoallv;
  t.barrier = nccl_barrier;
  t.comm_abort = nccl_comm_abort;
  return t;
}

const hvd_transport_collectives kCollectives = make_collectives();
hvd_plugin::ExtensionChain extensions;

hvd_transport_api make_api() {
  hvd_transport_api a{};
  a.struct_size = HVD_STRUCT_SIZE(hvd_transport_api, threading);
  a.ext = extensions.link({hvd_nccl::describe, &kCollectives});
  a.kind = HVD_PLUGIN_TRANSPORT;
  a.abi_major = HVD_ABI_VERSION_MAJOR;
  a.abi_minor = HVD_ABI_VERSION_MINOR;
  a.name = "nccl";
  a.version = "1.0";
  // Calls from a waiting thread too, one at a time: no state kept in a
  // thread between calls (each NCCL call names its communicator).
  a.threading = HVD_THREADING_SERIALIZED;
  a.init = nccl_init;
  a.finalize = nccl_finalize;
  a.get_properties = nccl_get_properties;
  a.last_error = nccl_last_error;
  a.listen = nccl_listen;
  a.accept = nccl_accept;
  a.connect = nccl_connect;
  a.conn_test = nccl_conn_test;
  a.conn_peer = nccl_conn_peer;
  a.conn_close = nccl_conn_close;
  a.listener_close = nccl_listener_close;
  a.mr_reg = nccl_mr_reg;
  a.mr_dereg = nccl_mr_dereg;
  a.isend = nccl_isend;
  a.irecv = nccl_irecv;
  a.test = nccl_test;
  a.wait_fd = nccl_wait_fd;
  a.wait_arm = nccl_wait_arm;
  a.abort = nccl_abort;
  return a;
}

const hvd_transport_api kApi = make_api();

}  // namespace

extern "C" HVD_EXPORT const hvd_transport_api* hvd_transport_get_api(
    uint32_t core_major, uint32_t) {
  return core_major == HVD_ABI_VERSION_MAJOR ? &kApi : nullptr;
}
