// The hierarchical reducer against the flat ring, as one job: run with
//   horovodrun ... launcher_hierarchical_job CONFIG.toml...
// For each configuration it initialises horovod, prints this rank's layout,
// runs allreduces (int32 sums that wrap, float32 sums of small integers, so
// exact, float32 sums of arbitrary values, float64 max) and allgathers of
// rows that differ per rank, checks what can be checked exactly, and prints
// one digest per result:
//   digest <config> <case> <fnv-1a of the result's bytes>
// The driver compares the digests across ranks and configurations. Exits
// non-zero on any failure, naming it.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "run_job.h"

using namespace mp;

namespace {

uint64_t fnv(const void* data, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

void digest(const std::string& config, const std::string& what,
            const void* data, size_t bytes) {
  std::printf("digest %s %s %016llx\n", config.c_str(), what.c_str(),
              static_cast<unsigned long long>(fnv(data, bytes)));
}

template <typename T>
void allreduce(const std::string& config, const char* kind, hvd_dtype d,
               hvd_reduce_op rop, size_t n, T (*value)(int, size_t),
               bool exact) {
  std::vector<T> buf(n), want(n);
  for (size_t i = 0; i < n; ++i) buf[i] = value(R, i);
  for (size_t i = 0; i < n; ++i) {
    T acc = value(0, i);
    for (int r = 1; r < N; ++r) {
      T v = value(r, i);
      if (rop == HVD_OP_MAX) {
        acc = v > acc ? v : acc;
      } else if constexpr (sizeof(T) == 4 && T(-1) < T(0) && T(1) / 2 == 0) {
        acc = static_cast<T>(static_cast<uint32_t>(acc) +
                             static_cast<uint32_t>(v));
      } else {
        acc += v;
      }
    }
    want[i] = acc;
  }
  const std::string what = std::string(kind) + "." + std::to_string(n);
  const int64_t shape[] = {static_cast<int64_t>(n)};
  hvd_tensor t = hvd_test::tensor_of(buf.data(), d, shape, 1);
  const std::string name = config + "." + what;
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, name, &t, 1);
  op.op = rop;
  hvd_handle* handle = nullptr;
  if (run_op(op, &handle) == HVD_OK) {
    if (exact) {
      expect(n == 0 || std::memcmp(buf.data(), want.data(), n * sizeof(T)) == 0,
             config + " " + what + ": result differs from the exact one");
    }
    digest(config, what, buf.data(), n * sizeof(T));
  }
  if (handle) hvd_release(handle);
}

int32_t wrap_value(int r, size_t i) {
  return static_cast<int32_t>(mix(static_cast<uint32_t>(i * 977 + r)));
}
float small_value(int r, size_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + r * 3) % 61) - 30);
}
float any_value(int r, size_t i) {
  return static_cast<float>(mix(static_cast<uint32_t>(i + 31 * r)) % 100000) /
         997.0f;
}
double max_value(int r, size_t i) {
  return static_cast<double>(mix(static_cast<uint32_t>(i * 13 + r))) / 7.0;
}

void allgather(const std::string& config, size_t rows_base) {
  const int64_t cols = 3;
  const int64_t rows = static_cast<int64_t>(rows_base) + R;
  std::vector<int32_t> mine(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = wrap_value(R, i);
  const int64_t shape[] = {rows, cols};
  hvd_tensor t = hvd_test::tensor_of(mine.data(), HVD_INT32, shape, 2);
  const std::string what = "allgather_i32." + std::to_string(rows_base);
  const std::string name = config + "." + what;
  hvd_op op = make_op(HVD_COLL_ALLGATHER, name, &t, 1);
  hvd_handle* handle = nullptr;
  if (run_op(op, &handle) == HVD_OK) {
    hvd_tensor out{};
    out.struct_size = sizeof out;
    if (hvd_handle_output(handle, 0, &out) == HVD_OK) {
      std::vector<int32_t> want;
      for (int r = 0; r < N; ++r) {
        size_t n = (rows_base + static_cast<size_t>(r)) * cols;
        for (size_t i = 0; i < n; ++i) want.push_back(wrap_value(r, i));
      }
      const auto* got = static_cast<const int32_t*>(out.data);
      expect(out.shape[0] == static_cast<int64_t>(want.size() / cols) &&
                 std::memcmp(got, want.data(), want.size() * 4) == 0,
             config + " " + what + ": gathered rows differ");
      digest(config, what, got, want.size() * 4);
    } else {
      expect(false, config + " " + what + ": no output");
    }
  }
  if (handle) hvd_release(handle);
}

}  // namespace

int main(int argc, char** argv) {
  const int status = run_job_per_config(
      argc, argv, "hierarchical", [](const std::string& config) {
        std::printf("layout %s rank=%d size=%d local=%d/%d cross=%d/%d\n",
                    config.c_str(), R, N, hvd_local_rank(), hvd_local_size(),
                    hvd_cross_rank(), hvd_cross_size());
        // 0, 1 and 3 elements leave some ranks of a host without a shard.
        for (size_t n : {size_t(0), size_t(1), size_t(3), size_t(5),
                         size_t(1001), size_t(262147)}) {
          allreduce<int32_t>(config, "sum_i32", HVD_INT32, HVD_OP_SUM, n,
                             wrap_value, true);
          allreduce<float>(config, "sum_f32_exact", HVD_FLOAT32, HVD_OP_SUM, n,
                           small_value, true);
          allreduce<float>(config, "sum_f32_any", HVD_FLOAT32, HVD_OP_SUM, n,
                           any_value, false);
          allreduce<double>(config, "max_f64", HVD_FLOAT64, HVD_OP_MAX, n,
                            max_value, true);
        }
        for (size_t rows : {size_t(0), size_t(2), size_t(40000)}) {
          allgather(config, rows);
        }
      });
  // What test_multihost.py looks for once every configuration ran.
  std::printf("rank done: %d failure(s)\n", g_failures);
  return status;
}
