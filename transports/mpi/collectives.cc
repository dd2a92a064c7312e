#include "collectives.h"

#include <climits>
#include <memory>
#include <vector>

#include "horovod_plugin/boundary.h"
#include "transport.h"

struct hvd_coll_comm_s : hvd_mpi::Comm {};

namespace hvd_mpi {
namespace {

using hvd_plugin::fail;
using hvd_plugin::guarded;

MPI_Datatype mpi_type(hvd_dtype dtype) {
  switch (dtype) {
    case HVD_UINT8:
      return MPI_UINT8_T;
    case HVD_INT8:
      return MPI_INT8_T;
    case HVD_UINT16:
      return MPI_UINT16_T;
    case HVD_INT16:
      return MPI_INT16_T;
    case HVD_INT32:
      return MPI_INT32_T;
    case HVD_INT64:
      return MPI_INT64_T;
    case HVD_FLOAT32:
      return MPI_FLOAT;
    case HVD_FLOAT64:
      return MPI_DOUBLE;
    case HVD_BOOL:
      return MPI_C_BOOL;
    default:
      return MPI_DATATYPE_NULL;  // MPI has no float16 or bfloat16
  }
}

MPI_Op mpi_op(hvd_reduce_op op) {
  switch (op) {
    case HVD_OP_SUM:
      return MPI_SUM;
    case HVD_OP_MIN:
      return MPI_MIN;
    case HVD_OP_MAX:
      return MPI_MAX;
    case HVD_OP_PRODUCT:
      return MPI_PROD;
    default:
      return MPI_OP_NULL;
  }
}

hvd_coll_comm_s* as_comm(hvd_coll_comm* comm) {
  if (comm == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "mpi: comm is NULL");
  return static_cast<hvd_coll_comm_s*>(comm);
}

int to_int(size_t value, const char* what) {
  if (value > INT_MAX) {
    fail(HVD_ERR_UNSUPPORTED, std::string("mpi: ") + what + " of " +
                                  std::to_string(value) +
                                  " elements exceeds MPI's int counts");
  }
  return static_cast<int>(value);
}

MPI_Datatype checked_type(hvd_dtype dtype, bool reducing) {
  MPI_Datatype type = mpi_type(dtype);
  if (type == MPI_DATATYPE_NULL || (reducing && dtype == HVD_BOOL)) {
    fail(HVD_ERR_UNSUPPORTED,
         "mpi: dtype " + std::to_string(dtype) + " has no MPI equivalent");
  }
  return type;
}

// Takes a request for `comm`, lets `post` start it, and hands it out.
template <typename Post>
hvd_status start(hvd_coll_comm* c, const char* what, uint64_t bytes,
                 hvd_request** out, Post&& post) {
  return guarded([&]() -> hvd_status {
    hvd_coll_comm_s* comm = as_comm(c);
    if (out == nullptr) fail(HVD_ERR_INVALID_ARGUMENT, "mpi: req is NULL");
    Transport& t = *comm->transport;
    if (hvd_status a = t.aborted(); a != HVD_OK)
      return hvd_plugin::refuse(a,
                                std::string("mpi: ") + what + " after abort");
    if (hvd_status a = comm->abort.reason(); a != HVD_OK)
      return hvd_plugin::refuse(a,
                                std::string("mpi: ") + what + " after abort");
    Request* r = t.take_request(Request::Kind::kCollective);
    r->comm = comm;
    r->what = what;
    r->bytes = bytes;
    int rc = MPI_SUCCESS;
    try {
      rc = post(*r, comm->comm);
    } catch (...) {
      t.give_back(r);
      throw;
    }
    if (rc != MPI_SUCCESS) {
      t.give_back(r);
      fail(HVD_ERR_SYSTEM, "mpi: " + mpi_error_text(what, rc));
    }
    *out = reinterpret_cast<hvd_request*>(r);
    return HVD_OK;
  });
}

size_t type_size(MPI_Datatype type) {
  int size = 0;
  MPI_Type_size(type, &size);
  return static_cast<size_t>(size);
}

// What a v-collective's request reports: the bytes of every member's
// block (0 where the comm or the counts are NULL; start() reports those).
uint64_t received_bytes(const hvd_coll_comm_s* comm, const size_t* recv_counts,
                        MPI_Datatype type) {
  size_t total = 0;
  if (comm && recv_counts) {
    for (int i = 0; i < comm->size; ++i) total += recv_counts[i];
  }
  return total * type_size(type);
}

hvd_status comm_create(hvd_transport* t, const hvd_team* team,
                       hvd_coll_comm** out) {
  return guarded([&] {
    if (t == nullptr || team == nullptr || out == nullptr) {
      fail(HVD_ERR_INVALID_ARGUMENT, "mpi: comm_create: NULL argument");
    }
    auto* transport = reinterpret_cast<Transport*>(t);
    Library& library = transport->library();
    std::vector<int> members(static_cast<size_t>(team->size));
    for (int32_t i = 0; i < team->size; ++i) {
      members[i] = library.mpi_rank_of(team->world_ranks[i]);
      if (members[i] < 0) {
        fail(HVD_ERR_INVALID_ARGUMENT,
             "mpi: comm_create: world rank " +
                 std::to_string(team->world_ranks[i]) +
                 " is not in this MPI job");
      }
    }
    MPI_Group all = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
    MPI_Comm_group(library.group_parent(), &all);
    MPI_Group_incl(all, team->size, members.data(), &group);
    MPI_Group_free(&all);
    auto comm = std::make_unique<hvd_coll_comm_s>();
    comm->transport = transport;
    // Creations for different process sets may overlap in time on a rank
    // that belongs to several; a tag per set keeps them apart.
    int tag =
        static_cast<int>(static_cast<uint32_t>(team->process_set) % 30000);
    int rc =
        MPI_Comm_create_group(library.group_parent(), group, tag, &comm->comm);
    MPI_Group_free(&group);
    check_mpi("MPI_Comm_create_group", rc);
    MPI_Comm_set_errhandler(comm->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm->comm, &comm->rank);
    MPI_Comm_size(comm->comm, &comm->size);
    if (comm->rank != team->rank) {
      MPI_Comm_free(&comm->comm);
      fail(HVD_ERR_INTERNAL, "mpi: comm_create: MPI ranks this process " +
                                 std::to_string(comm->rank) + ", the team " +
                                 std::to_string(team->rank));
    }
    *out = comm.release();
    return HVD_OK;
  });
}

hvd_status comm_destroy(hvd_coll_comm* c) {
  return guarded([&] {
    hvd_coll_comm_s* comm = as_comm(c);
    int finalised = 0;
    MPI_Finalized(&finalised);
    // After an abort a collective may still run on it; MPI_Comm_free would
    // wait for it, so the communicator is left to the end of the job.
    if (!finalised && !comm->abort.tripped() &&
        comm->transport->aborted() == HVD_OK) {
      MPI_Comm_free(&comm->comm);
    }
    delete comm;
    return HVD_OK;
  });
}

int32_t supports(hvd_coll_comm*, hvd_collective coll, hvd_dtype dtype,
                 hvd_reduce_op op, hvd_mem_kind mem) {
  if (mem != HVD_MEM_HOST) return 0;
  const bool reducing =
      coll == HVD_COLL_ALLREDUCE || coll == HVD_COLL_REDUCESCATTER;
  switch (coll) {
    case HVD_COLL_BARRIER:
      return 1;
    case HVD_COLL_ALLREDUCE:
    case HVD_COLL_REDUCESCATTER:
    case HVD_COLL_ALLGATHER:
    case HVD_COLL_BROADCAST:
    case HVD_COLL_ALLTOALL:
      break;
    default:
      return 0;
  }
  if (mpi_type(dtype) == MPI_DATATYPE_NULL) return 0;
  if (reducing && (dtype == HVD_BOOL || mpi_op(op) == MPI_OP_NULL)) return 0;
  return 1;
}

hvd_status allreduce(hvd_coll_comm* c, const void* send, void* recv,
                     size_t count, hvd_dtype dtype, hvd_reduce_op op,
                     hvd_stream, hvd_request** req) {
  MPI_Datatype type = mpi_type(dtype);
  return start(c, "MPI_Iallreduce", count * type_size(type), req,
               [&](Request& r, MPI_Comm comm) {
                 MPI_Op mop = mpi_op(op);
                 if (mop == MPI_OP_NULL) {
                   fail(HVD_ERR_UNSUPPORTED, "mpi: op " + std::to_string(op) +
                                                 " has no MPI equivalent");
                 }
                 return MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv,
                                       to_int(count, "allreduce"),
                                       checked_type(dtype, true), mop, comm,
                                       &r.mpi);
               });
}

hvd_status allgatherv(hvd_coll_comm* c, const void* send, size_t send_count,
                      void* recv, const size_t* recv_counts,
                      const size_t* recv_displs, hvd_dtype dtype, hvd_stream,
                      hvd_request** req) {
  MPI_Datatype type = mpi_type(dtype);
  hvd_coll_comm_s* comm = static_cast<hvd_coll_comm_s*>(c);
  return start(
      c, "MPI_Iallgatherv", received_bytes(comm, recv_counts, type), req,
      [&](Request& r, MPI_Comm mpi) {
        if (!recv_counts || !recv_displs) {
          fail(HVD_ERR_INVALID_ARGUMENT, "mpi: allgatherv: NULL counts");
        }
        auto& counts = r.counts[0];
        auto& displs = r.counts[1];
        for (int i = 0; i < comm->size; ++i) {
          counts.push_back(to_int(recv_counts[i], "allgather"));
          displs.push_back(to_int(recv_displs[i], "allgather"));
        }
        MPI_Datatype t = checked_type(dtype, false);
        const bool in_place =
            send == recv || send == static_cast<const char*>(recv) +
                                        recv_displs[comm->rank] * type_size(t);
        return MPI_Iallgatherv(in_place ? MPI_IN_PLACE : send,
                               to_int(send_count, "allgather"), t, recv,
                               counts.data(), displs.data(), t, mpi, &r.mpi);
      });
}

hvd_status broadcast(hvd_coll_comm* c, void* buf, size_t count, hvd_dtype dtype,
                     int32_t root, hvd_stream, hvd_request** req) {
  MPI_Datatype type = mpi_type(dtype);
  return start(c, "MPI_Ibcast", count * type_size(type), req,
               [&](Request& r, MPI_Comm comm) {
                 return MPI_Ibcast(buf, to_int(count, "broadcast"),
                                   checked_type(dtype, false), root, comm,
                                   &r.mpi);
               });
}

hvd_status reducescatter(hvd_coll_comm* c, const void* send, void* recv,
                         const size_t* recv_counts, hvd_dtype dtype,
                         hvd_reduce_op op, hvd_stream, hvd_request** req) {
  MPI_Datatype type = mpi_type(dtype);
  hvd_coll_comm_s* comm = static_cast<hvd_coll_comm_s*>(c);
  uint64_t mine = comm && recv_counts ? recv_counts[comm->rank] : 0;
  return start(
      c, "MPI_Ireduce_scatter", mine * type_size(type), req,
      [&](Request& r, MPI_Comm mpi) {
        if (!recv_counts) {
          fail(HVD_ERR_INVALID_ARGUMENT, "mpi: reducescatter: NULL counts");
        }
        MPI_Op mop = mpi_op(op);
        if (mop == MPI_OP_NULL || send == recv) {
          fail(HVD_ERR_UNSUPPORTED,
               "mpi: reducescatter: op or in-place unsupported");
        }
        auto& counts = r.counts[0];
        for (int i = 0; i < comm->size; ++i) {
          counts.push_back(to_int(recv_counts[i], "reducescatter"));
        }
        return MPI_Ireduce_scatter(send, recv, counts.data(),
                                   checked_type(dtype, true), mop, mpi, &r.mpi);
      });
}

hvd_status alltoallv(hvd_coll_comm* c, const void* send,
                     const size_t* send_counts, const size_t* send_displs,
                     void* recv, const size_t* recv_counts,
                     const size_t* recv_displs, hvd_dtype dtype, hvd_stream,
                     hvd_request** req) {
  MPI_Datatype type = mpi_type(dtype);
  hvd_coll_comm_s* comm = static_cast<hvd_coll_comm_s*>(c);
  return start(
      c, "MPI_Ialltoallv", received_bytes(comm, recv_counts, type), req,
      [&](Request& r, MPI_Comm mpi) {
        if (!send_counts || !send_displs || !recv_counts || !recv_displs) {
          fail(HVD_ERR_INVALID_ARGUMENT, "mpi: alltoallv: NULL counts");
        }
        if (send == recv) {
          fail(HVD_ERR_UNSUPPORTED, "mpi: alltoallv in place");
        }
        for (int i = 0; i < comm->size; ++i) {
          r.counts[0].push_back(to_int(send_counts[i], "alltoall"));
          r.counts[1].push_back(to_int(send_displs[i], "alltoall"));
          r.counts[2].push_back(to_int(recv_counts[i], "alltoall"));
          r.counts[3].push_back(to_int(recv_displs[i], "alltoall"));
        }
        MPI_Datatype t = checked_type(dtype, false);
        return MPI_Ialltoallv(send, r.counts[0].data(), r.counts[1].data(), t,
                              recv, r.counts[2].data(), r.counts[3].data(), t,
                              mpi, &r.mpi);
      });
}

hvd_status barrier(hvd_coll_comm* c, hvd_request** req) {
  return start(c, "MPI_Ibarrier", 0, req, [&](Request& r, MPI_Comm comm) {
    return MPI_Ibarrier(comm, &r.mpi);
  });
}

hvd_status comm_abort(hvd_coll_comm* c, hvd_status reason, int32_t peer) {
  if (c == nullptr) return HVD_ERR_INVALID_ARGUMENT;
  static_cast<hvd_coll_comm_s*>(c)->abort.trip(reason, peer);
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
    comm_abort,
};

}  // namespace hvd_mpi
