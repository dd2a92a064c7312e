// fused_allreduce_bench: fused CUDA allreduce through the runtime (the
// device fusion path: batched copies into a device fusion buffer, NCCL on
// it, completion by event) next to raw ncclAllReduce on a buffer of the
// same size, in the same process, on one rank:
//
//   fused_allreduce_bench CONFIG.toml [--iters 20]
//
// CONFIG names nccl as [transport] gpu and loads the native reducer. Each
// step is a set of averaged float32 allreduces enqueued together (they fuse
// into one response); the raw column is one ncclAllReduce of all their
// bytes, waited for with cudaStreamSynchronize. Several GPUs: see
// nccl_busbw for the transport across ranks.
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "horovod/horovod.h"
#include "tensor_of.h"

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "fused_allreduce_bench: %s\n", why.c_str());
  std::exit(1);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) die(std::string(what) + ": " + ncclGetErrorString(r));
}

struct Row {
  std::string size;
  size_t tensors;
  double runtime_s, raw_s, bytes;
};

// Seconds per step of `tensors` averaged allreduces of `each` floats.
double runtime_step(size_t tensors, size_t each, int iters) {
  std::vector<float*> data(tensors);
  std::vector<int64_t> shape(tensors, int64_t(each));
  std::vector<hvd_tensor> desc(tensors);
  std::vector<std::string> names(tensors);
  for (size_t t = 0; t < tensors; ++t) {
    check(cudaMalloc(&data[t], each * sizeof(float)), "cudaMalloc");
    check(cudaMemset(data[t], 0, each * sizeof(float)), "cudaMemset");
    desc[t] = hvd_test::tensor_of(data[t], HVD_FLOAT32, &shape[t], 1,
                                  {HVD_MEM_CUDA, 0});
    names[t] = "bench." + std::to_string(tensors) + "." + std::to_string(t);
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<hvd_handle*> handles(tensors);
  auto step = [&] {
    for (size_t t = 0; t < tensors; ++t) {
      hvd_op op{};
      op.struct_size = sizeof op;
      op.collective = HVD_COLL_ALLREDUCE;
      op.name = names[t].c_str();
      op.tensor_count = 1;
      op.inputs = &desc[t];
      op.op = HVD_OP_AVERAGE;
      if (hvd_enqueue(&op, &handles[t]) != HVD_OK) die(hvd_last_error());
    }
    for (hvd_handle* h : handles) {
      if (hvd_wait(h, 60000) != HVD_OK) die(hvd_handle_message(h));
      hvd_release(h);
    }
  };
  for (int i = 0; i < 3; ++i) step();
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) step();
  const double s =
      std::chrono::duration<double>(Clock::now() - start).count() / iters;
  for (float* p : data) cudaFree(p);
  return s;
}

double raw_nccl(ncclComm_t comm, cudaStream_t stream, size_t floats,
                int iters) {
  float* buf = nullptr;
  check(cudaMalloc(&buf, floats * sizeof(float)), "cudaMalloc");
  auto call = [&] {
    check(ncclAllReduce(buf, buf, floats, ncclFloat, ncclSum, comm, stream),
          "ncclAllReduce");
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  };
  for (int i = 0; i < 3; ++i) call();
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) call();
  const double s =
      std::chrono::duration<double>(Clock::now() - start).count() / iters;
  cudaFree(buf);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) die("usage: fused_allreduce_bench CONFIG.toml [--iters N]");
  int iters = 20;
  if (argc == 4 && std::string(argv[2]) == "--iters")
    iters = std::atoi(argv[3]);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("fused_allreduce_bench: no CUDA device, nothing to measure\n");
    return 0;
  }
  hvd_init_options options{};
  options.struct_size = sizeof options;
  options.config_path = argv[1];
  if (hvd_init(&options) != HVD_OK) die(hvd_last_error());
  if (hvd_size() != 1) die("runs on one rank (nccl_busbw covers several)");
  ncclComm_t comm;
  int device = 0;
  check(ncclCommInitAll(&comm, 1, &device), "ncclCommInitAll");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
        "cudaStreamCreate");

  std::vector<Row> rows;
  for (size_t mib : {64, 256}) {
    const size_t floats = (mib << 20) / sizeof(float);
    rows.push_back({std::to_string(mib) + " MiB", 4,
                    runtime_step(4, floats / 4, iters),
                    raw_nccl(comm, stream, floats, iters), double(mib << 20)});
  }
  rows.push_back({"400 KiB", 100, runtime_step(100, 1024, iters * 5),
                  raw_nccl(comm, stream, 100 * 1024, iters * 5), 100.0 * 4096});

  std::printf("%-9s %7s %12s %10s %12s %9s\n", "size", "tensors", "runtime us",
              "raw us", "algbw GB/s", "raw/rt");
  for (const Row& r : rows) {
    std::printf("%-9s %7zu %12.1f %10.1f %12.1f %8.0f%%\n", r.size.c_str(),
                r.tensors, r.runtime_s * 1e6, r.raw_s * 1e6,
                r.bytes / r.runtime_s / 1e9, 100.0 * r.raw_s / r.runtime_s);
  }
  const Row& small = rows.back();
  std::printf("small step: %.2f us per tensor over one raw ncclAllReduce\n",
              (small.runtime_s - small.raw_s) * 1e6 / double(small.tensors));
  ncclCommDestroy(comm);
  cudaStreamDestroy(stream);
  hvd_shutdown();
  return 0;
}
