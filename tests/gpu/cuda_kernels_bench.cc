// cuda_kernels_bench: bandwidth of the device layer's CUDA kernels next to
// cudaMemcpy device-to-device on the same device, in the same run:
//
//   cuda_kernels_bench [--mib 256] [--iters 20]
//
// Each line is one operation over --mib MiB: the bytes read plus written
// per second, and that as a share of cudaMemcpyAsync D2D. The batched copy
// moves 64 tensors of --mib / 64 MiB each in one launch (a fusion buffer's
// copy-in); scale is float32 in place (the prescale of a fusion buffer).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "device/device.h"

namespace {

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "cuda_kernels_bench: %s\n", why.c_str());
  std::exit(1);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}

void check(hvd_status s, const char* what) {
  if (s != HVD_OK) die(std::string(what) + ": " + hvd::last_error());
}

// Seconds per call of `work`, queued `iters` times on `stream` after a
// warm-up call.
double time_on(cudaStream_t stream, int iters,
               const std::function<void()>& work) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  work();
  check(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < iters; ++i) work();
  check(cudaEventRecord(stop, stream), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / 1e3 / iters;
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 256;
  int iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--mib") {
      mib = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (arg == "--iters") {
      iters = std::atoi(argv[i + 1]);
    } else {
      die("usage: cuda_kernels_bench [--mib N] [--iters N]");
    }
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("cuda_kernels_bench: no CUDA device, nothing to measure\n");
    return 0;
  }
  const hvd_device gpu{HVD_MEM_CUDA, 0};
  const std::string why = hvd::fusion_kernels_unavailable(gpu);
  if (!why.empty()) die(why);
  const hvd_device_api& api = *hvd::device_api();
  hvd_stream stream = nullptr;
  check(api.stream_create(api.ctx, gpu, &stream), "stream_create");
  cudaStream_t native =
      static_cast<cudaStream_t>(api.stream_native(api.ctx, stream));

  const size_t bytes = mib << 20;
  void *src = nullptr, *dst = nullptr;
  check(cudaMalloc(&src, bytes), "cudaMalloc");
  check(cudaMalloc(&dst, bytes), "cudaMalloc");
  check(cudaMemset(src, 1, bytes), "cudaMemset");
  std::vector<hvd::CopyEntry> copies;
  const size_t piece = bytes / 64;
  for (size_t i = 0; i < 64; ++i) {
    copies.push_back({static_cast<char*>(dst) + i * piece,
                      static_cast<char*>(src) + i * piece, piece});
  }

  const double memcpy_s = time_on(native, iters, [&] {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, native),
          "cudaMemcpyAsync");
  });
  const double batched_s = time_on(native, iters, [&] {
    check(hvd::batched_copy(gpu, copies, stream), "batched_copy");
  });
  const double scale_s = time_on(native, iters, [&] {
    check(api.scale(api.ctx, gpu, HVD_FLOAT32, dst, bytes / 4, 0.5, stream),
          "scale");
  });
  const double traffic = 2.0 * double(bytes) / 1e9;  // read + write, GB
  std::printf("%-34s %10s %8s\n", "kernel (MiB read + written)", "GB/s",
              "vs D2D");
  auto line = [&](const char* name, double s) {
    std::printf("%-34s %10.1f %7.0f%%\n", name, traffic / s,
                100.0 * memcpy_s / s);
  };
  line(("cudaMemcpy D2D, " + std::to_string(mib) + " MiB").c_str(), memcpy_s);
  line("batched copy, 64 tensors", batched_s);
  line("scale float32, in place", scale_s);
  cudaFree(src);
  cudaFree(dst);
  api.stream_destroy(api.ctx, stream);
  return 0;
}
