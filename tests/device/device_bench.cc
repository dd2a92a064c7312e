// Bandwidth of the host kernels and of copy_large at 64 MiB (override with
// the first argument, in MiB), median of several runs. Not a test: run it
// by hand, e.g. build/bin/device_bench 64.
//
// "operand GB/s" is the size of one operand over the time; "memory GB/s"
// counts every byte read and written (3 per reduced byte, 2 per copied).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "device/device.h"
#include "device/host_kernels.h"

namespace {

double median_seconds(const std::function<void()>& body, int runs) {
  body();  // warm: page faults, caches
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    t.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void report(const char* what, size_t bytes, int touches, double seconds) {
  std::printf("%-40s %8.2f ms  operand %6.2f GB/s  memory %6.2f GB/s\n", what,
              seconds * 1e3, bytes / seconds / 1e9,
              touches * bytes / seconds / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 64;
  const size_t bytes = mib << 20;
  const int runs = 11;
  std::vector<char> a(bytes), b(bytes), c(bytes);
  for (size_t i = 0; i < bytes; ++i) {
    a[i] = (char)(i % 61);
    b[i] = (char)(i % 59);
  }
  std::memset(c.data(), 0, bytes);
  std::printf("%zu MiB per operand, median of %d runs, kernels: %s\n", mib,
              runs, hvd::host_kernels().name);

  struct Variant {
    const char* name;
    const hvd::HostKernels* k;
  };
  std::vector<Variant> variants = {{"generic", &hvd::host_kernels_generic()}};
#if defined(HVD_HAVE_AVX2_KERNELS)
  if (hvd::host_kernels().name == std::string("avx2")) {
    variants.push_back({"avx2", &hvd::host_kernels_avx2()});
  }
#endif
  for (const Variant& v : variants) {
    for (hvd_dtype dtype : {HVD_FLOAT32, HVD_FLOAT16, HVD_BFLOAT16}) {
      const size_t n = bytes / hvd::dtype_size(dtype);
      const hvd::ReduceKernel sum = v.k->reduce[dtype][hvd::kKernelSum];
      char label[96];
      std::snprintf(label, sizeof label, "reduce SUM %s (%s) c=a+b",
                    hvd::dtype_name(dtype), v.name);
      report(
          label, bytes, 3,
          median_seconds([&] { sum(c.data(), a.data(), b.data(), n); }, runs));
      std::snprintf(label, sizeof label, "reduce SUM %s (%s) a+=b",
                    hvd::dtype_name(dtype), v.name);
      // Small integers keep the repeated in-place sums finite and exact.
      std::memset(c.data(), 0, bytes);
      report(
          label, bytes, 3,
          median_seconds([&] { sum(c.data(), c.data(), b.data(), n); }, runs));
    }
  }
  report("copy_large", bytes, 2,
         median_seconds([&] { hvd::copy_large(c.data(), a.data(), bytes); },
                        runs));
  report("memcpy", bytes, 2,
         median_seconds([&] { std::memcpy(c.data(), a.data(), bytes); }, runs));
  return 0;
}
