#include "mpi_peer.h"

#include <mpi.h>

#include <cstdlib>
#include <string>

#include "common/error.h"
#include "options.h"

namespace hvd_bench {
namespace {

using hvd::Error;

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
}

class MpiPeer : public Layer {
 public:
  MpiPeer(hvd_collective collective, bool nonblocking)
      : nonblocking_(nonblocking),
        function_(function_name(collective, nonblocking)) {
    if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) {
      throw Error(HVD_ERR_SYSTEM, "--peer mpi: MPI_Init failed");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    library_.assign(version, static_cast<size_t>(length));
    size_t cut = library_.find_first_of(",\n");
    if (cut != std::string::npos) library_.resize(cut);
  }
  ~MpiPeer() override { MPI_Finalize(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override {
    return library_ + " (" + function_ + (nonblocking_ ? " + MPI_Test" : "") +
           " on MPI_COMM_WORLD)";
  }

  void prepare(const Shape& shape, Workload& workload) override {
    shape_ = shape;
    send_ = workload.send();
    recv_ = workload.recv();
    const bool reduces = shape.collective == HVD_COLL_ALLREDUCE ||
                         shape.collective == HVD_COLL_REDUCESCATTER;
    switch (shape.dtype) {
      case HVD_FLOAT64:
        type_ = MPI_DOUBLE;
        break;
      case HVD_INT32:
        type_ = MPI_INT32_T;
        break;
      case HVD_INT64:
        type_ = MPI_INT64_T;
        break;
      case HVD_FLOAT16:
      case HVD_BFLOAT16:
        if (reduces) {
          throw Error(HVD_ERR_UNSUPPORTED,
                      std::string("--peer mpi: MPI has no ") +
                          dtype_label(shape.dtype) + " sum");
        }
        type_ = MPI_UINT16_T;
        break;
      default:
        type_ = MPI_FLOAT;
        break;
    }
  }

  void run_once() override {
    int rc = nonblocking_ ? run_nonblocking() : run_blocking();
    if (rc != MPI_SUCCESS) {
      throw Error(HVD_ERR_SYSTEM,
                  function_ + " of " + std::to_string(shape_.bytes()) +
                      " bytes on rank " + std::to_string(rank_) + ": " +
                      mpi_error(rc));
    }
  }

  std::string algorithm() const override { return "mpi"; }

  void barrier() override {
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
      throw Error(HVD_ERR_SYSTEM, "MPI_Barrier: " + mpi_error(rc));
  }

  std::vector<double> max_over_ranks(const std::vector<double>& mine) override {
    std::vector<double> out(mine.size());
    int rc =
        MPI_Allreduce(mine.data(), out.data(), static_cast<int>(mine.size()),
                      MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
      throw Error(HVD_ERR_SYSTEM, "MPI_Allreduce: " + mpi_error(rc));
    return out;
  }

 private:
  static std::string function_name(hvd_collective collective,
                                   bool nonblocking) {
    switch (collective) {
      case HVD_COLL_ALLREDUCE:
        return nonblocking ? "MPI_Iallreduce" : "MPI_Allreduce";
      case HVD_COLL_ALLGATHER:
        return nonblocking ? "MPI_Iallgather" : "MPI_Allgather";
      case HVD_COLL_BROADCAST:
        return nonblocking ? "MPI_Ibcast" : "MPI_Bcast";
      case HVD_COLL_ALLTOALL:
        return nonblocking ? "MPI_Ialltoall" : "MPI_Alltoall";
      default:
        return nonblocking ? "MPI_Ireduce_scatter_block"
                           : "MPI_Reduce_scatter_block";
    }
  }

  int run_blocking() {
    const int block = static_cast<int>(shape_.block);
    const int count = static_cast<int>(shape_.count);
    switch (shape_.collective) {
      case HVD_COLL_ALLREDUCE:
        return MPI_Allreduce(send_, recv_, count, type_, MPI_SUM,
                             MPI_COMM_WORLD);
      case HVD_COLL_ALLGATHER:
        return MPI_Allgather(send_, block, type_, recv_, block, type_,
                             MPI_COMM_WORLD);
      case HVD_COLL_BROADCAST:
        return MPI_Bcast(recv_, count, type_, 0, MPI_COMM_WORLD);
      case HVD_COLL_ALLTOALL:
        return MPI_Alltoall(send_, block, type_, recv_, block, type_,
                            MPI_COMM_WORLD);
      case HVD_COLL_REDUCESCATTER:
        return MPI_Reduce_scatter_block(send_, recv_, block, type_, MPI_SUM,
                                        MPI_COMM_WORLD);
      default:
        throw Error(HVD_ERR_UNSUPPORTED,
                    "--peer mpi: no MPI collective for this one");
    }
  }

  int run_nonblocking() {
    const int block = static_cast<int>(shape_.block);
    const int count = static_cast<int>(shape_.count);
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    switch (shape_.collective) {
      case HVD_COLL_ALLREDUCE:
        rc = MPI_Iallreduce(send_, recv_, count, type_, MPI_SUM, MPI_COMM_WORLD,
                            &req);
        break;
      case HVD_COLL_ALLGATHER:
        rc = MPI_Iallgather(send_, block, type_, recv_, block, type_,
                            MPI_COMM_WORLD, &req);
        break;
      case HVD_COLL_BROADCAST:
        rc = MPI_Ibcast(recv_, count, type_, 0, MPI_COMM_WORLD, &req);
        break;
      case HVD_COLL_ALLTOALL:
        rc = MPI_Ialltoall(send_, block, type_, recv_, block, type_,
                           MPI_COMM_WORLD, &req);
        break;
      case HVD_COLL_REDUCESCATTER:
        rc = MPI_Ireduce_scatter_block(send_, recv_, block, type_, MPI_SUM,
                                       MPI_COMM_WORLD, &req);
        break;
      default:
        throw Error(HVD_ERR_UNSUPPORTED,
                    "--peer mpi-nb: no MPI collective for this one");
    }
    for (int done = 0; rc == MPI_SUCCESS && !done;) {
      rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    }
    return rc;
  }

  bool nonblocking_;
  int rank_ = 0, size_ = 1;
  std::string library_, function_;
  Shape shape_;
  const void* send_ = nullptr;
  void* recv_ = nullptr;
  MPI_Datatype type_ = MPI_FLOAT;
};

}  // namespace

std::unique_ptr<Layer> make_mpi_peer(hvd_collective collective,
                                     bool nonblocking) {
  if (!launched_by_mpirun()) {
    throw Error(
        HVD_ERR_CONFIG,
        "--peer mpi needs the job started by mpirun (e.g. mpirun -np 2 "
        "--mca pml ob1 --mca btl self,vader horovod-bench --peer mpi ...); "
        "this one was not (no OMPI_COMM_WORLD_SIZE in the environment)");
  }
  return std::make_unique<MpiPeer>(collective, nonblocking);
}

}  // namespace hvd_bench
