// One rank per GPU (horovodrun -np 2 on a machine with two): CUDA tensors
// go through the public API straight to the gpu scope's nccl transport and
// the native reducer, with no staging, and the results are checked on the
// device. With fewer GPUs than ranks it prints "[  SKIPPED ]" and exits 0
// (NCCL refuses two ranks on one GPU).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "run_job.h"

using namespace mp;

namespace {

// In-place allreduce of `n` floats, rank r holding r + 1 + i % 5 (direct);
// then the same with AVERAGE (staged: the host scales).
void allreduce_on_the_device(size_t n, int device) {
  std::vector<float> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = float(R + 1 + int(i % 5));
  float* d = nullptr;
  expect(cudaMalloc(&d, n * sizeof(float)) == cudaSuccess, "cudaMalloc");
  for (hvd_reduce_op reduce : {HVD_OP_SUM, HVD_OP_AVERAGE}) {
    cudaMemcpy(d, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    int64_t shape[] = {int64_t(n)};
    hvd_tensor t =
        hvd_test::tensor_of(d, HVD_FLOAT32, shape, 1, {HVD_MEM_CUDA, device});
    std::string name =
        "direct." + std::to_string(n) + "." + std::to_string(int(reduce));
    hvd_op op = make_op(HVD_COLL_ALLREDUCE, name, &t, 1);
    op.op = reduce;
    const hvd_status s = run_op(op);
    std::vector<float> got(n);
    cudaMemcpy(got.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < n && s == HVD_OK; ++i) {
      // sum over ranks r of (r + 1 + i % 5)
      float sum = float(N * (N + 1) / 2 + N * int(i % 5));
      float want = reduce == HVD_OP_SUM ? sum : sum / float(N);
      if (got[i] != want) {
        expect(false, name + ": element " + std::to_string(i) + " is " +
                          std::to_string(got[i]) + ", not " +
                          std::to_string(want));
        break;
      }
    }
  }
  cudaFree(d);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return usage(argv[0], "CONFIG.toml");
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  const char* local = std::getenv("HOROVOD_LOCAL_RANK");
  const char* local_size = std::getenv("HOROVOD_LOCAL_SIZE");
  const int device = local ? std::atoi(local) : 0;
  const int wanted = local_size ? std::atoi(local_size) : 1;
  if (devices < wanted) {
    std::printf(
        "[  SKIPPED ] %d CUDA device(s) for %d rank(s) on this host; "
        "NCCL needs one per rank\n",
        devices, wanted);
    return 0;
  }
  cudaSetDevice(device);
  return run_job(argc, argv, "direct CUDA allreduce", [device] {
    allreduce_on_the_device(4, device);
    allreduce_on_the_device((1u << 20) + 3, device);
  });
}
