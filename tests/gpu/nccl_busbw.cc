// nccl_busbw: bus bandwidth of float32 allreduce over CUDA memory through
// the nccl transport's collectives extension, next to NCCL's own
// ncclAllReduce on a communicator of the same ranks, measured in the same
// run. One process per GPU, started by horovodrun (or alone for one rank):
//
//   horovodrun -np 2 nccl_busbw [--iters 20] [--sizes 1,8,64,256]  (MiB)
//
// busbw = algbw * 2 (n - 1) / n, as nccl-tests reports it; with one rank
// there is no bus, and algbw (bytes / time) is shown.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap_world.h"
#include "config/config.h"
#include "gpu_world.h"

namespace {

using Clock = std::chrono::steady_clock;
using hvd_gpu_test::nccl_api;
using hvd_gpu_test::nccl_collectives;

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "nccl_busbw: %s\n", why.c_str());
  std::exit(1);
}

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    die(std::string(what) + ": " + cudaGetErrorName(e) + ": " +
        cudaGetErrorString(e));
  }
}

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) die(std::string(what) + ": " + ncclGetErrorString(r));
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 20;
  std::vector<size_t> mib = {1, 8, 64, 256};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--iters" && i + 1 < argc) {
      iters = std::atoi(argv[++i]);
    } else if (arg == "--sizes" && i + 1 < argc) {
      mib.clear();
      std::stringstream list(argv[++i]);
      for (std::string item; std::getline(list, item, ',');) {
        mib.push_back(std::strtoull(item.c_str(), nullptr, 10));
      }
    } else {
      std::fprintf(stderr, "usage: nccl_busbw [--iters N] [--sizes MiB,...]\n");
      return 2;
    }
  }
  std::string why;
  int devices = hvd_gpu_test::cuda_devices(&why);
  if (devices == 0) {
    std::printf("nccl_busbw: no CUDA device here (%s); nothing to measure\n",
                why.c_str());
    return 0;
  }
  try {
    hvd::Config config = hvd::Config::load();
    hvd_conformance::BootstrapWorld world(config, "nccl");
    const int rank = world.rank(), size = world.size();
    const int device = world.host()->world->local_rank % devices;
    check_cuda(cudaSetDevice(device), "cudaSetDevice");

    const hvd_transport_api& api = nccl_api();
    const hvd_transport_collectives& coll = nccl_collectives();
    hvd_transport* t = nullptr;
    if (api.init(world.host(), &t) != HVD_OK) die(api.last_error(nullptr));
    std::vector<int32_t> ranks(size), hosts(size, 0);
    std::iota(ranks.begin(), ranks.end(), 0);
    hvd_team team{};
    team.struct_size = sizeof(team);
    team.rank = rank;
    team.size = size;
    team.world_ranks = ranks.data();
    team.host_of = hosts.data();
    team.host_count = 1;
    hvd_coll_comm* comm = nullptr;
    hvd_status s;
    while ((s = coll.comm_create(t, &team, &comm)) == HVD_AGAIN) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    if (s != HVD_OK) die(std::string("comm_create: ") + api.last_error(t));

    // NCCL's own communicator over the same ranks, for the reference.
    ncclUniqueId id;
    if (rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    hvd_conformance::Bytes mine(sizeof(id));
    std::memcpy(mine.data(), &id, sizeof(id));
    if (rank == 0) world.put("nccl_busbw.id", mine);
    hvd_conformance::Bytes got =
        world.get(0, "nccl_busbw.id", std::chrono::seconds(60));
    std::memcpy(&id, got.data(), sizeof(id));
    ncclComm_t raw = nullptr;
    check_nccl(ncclCommInitRank(&raw, size, id, rank), "ncclCommInitRank");
    cudaStream_t stream = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
               "cudaStreamCreate");

    const double bus = size > 1 ? 2.0 * (size - 1) / size : 1.0;
    if (rank == 0) {
      std::printf(
          "nccl_busbw: %d rank(s), device %d, %d iterations, float32 "
          "allreduce; %s\n",
          size, device, iters,
          size > 1 ? "busbw = algbw * 2(n-1)/n" : "one rank: algbw (no bus)");
      std::printf("%10s %14s %14s %14s %14s %9s\n", "bytes", "plugin us",
                  "plugin GB/s", "nccl us", "nccl GB/s", "overhead");
    }
    for (size_t m : mib) {
      const size_t bytes = m << 20, count = bytes / sizeof(float);
      void* buf = nullptr;
      check_cuda(cudaMalloc(&buf, bytes), "cudaMalloc");
      check_cuda(cudaMemset(buf, 0, bytes), "cudaMemset");
      auto plugin_round = [&](int n) {
        std::vector<hvd_request*> reqs(n);
        for (int i = 0; i < n; ++i) {
          if (coll.allreduce(comm, buf, buf, count, HVD_FLOAT32, HVD_OP_SUM,
                             nullptr, &reqs[i]) != HVD_OK) {
            die(std::string("allreduce: ") + api.last_error(t));
          }
        }
        for (hvd_request* r : reqs) {
          hvd_completion c = hvd_gpu_test::wait(api, t, r);
          if (c.status != HVD_OK) die("an allreduce failed");
        }
      };
      auto raw_round = [&](int n) {
        for (int i = 0; i < n; ++i) {
          check_nccl(
              ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, raw, stream),
              "ncclAllReduce");
        }
        check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      };
      plugin_round(5);
      raw_round(5);
      world.barrier("warm." + std::to_string(m), std::chrono::seconds(60));
      auto t0 = Clock::now();
      plugin_round(iters);
      double plugin_s = seconds_since(t0) / iters;
      world.barrier("plugin." + std::to_string(m), std::chrono::seconds(60));
      t0 = Clock::now();
      raw_round(iters);
      double raw_s = seconds_since(t0) / iters;
      world.barrier("raw." + std::to_string(m), std::chrono::seconds(60));
      if (rank == 0) {
        double pg = double(bytes) / plugin_s / 1e9 * bus;
        double rg = double(bytes) / raw_s / 1e9 * bus;
        std::printf("%10zu %14.1f %14.2f %14.1f %14.2f %8.1f%%\n", bytes,
                    plugin_s * 1e6, pg, raw_s * 1e6, rg,
                    (plugin_s / raw_s - 1.0) * 100.0);
        std::fflush(stdout);
      }
      cudaFree(buf);
    }
    ncclCommDestroy(raw);
    cudaStreamDestroy(stream);
    coll.comm_destroy(comm);
    api.finalize(t);
  } catch (const std::exception& e) {
    die(e.what());
  }
  return 0;
}
