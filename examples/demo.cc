// horovod-demo: a small tour of the C API. Run it as a job:
//
//   horovodrun -np 4 build/bin/horovod-demo [--mib N] [--iterations N]
//
// Every rank allreduces, allgathers and broadcasts a small tensor and checks
// the result; rank 0 prints them, then times a large allreduce and prints
// the bandwidth it reached. Exits non-zero if any result is wrong.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "horovod/horovod.h"

namespace {

int rank_ = 0, size_ = 1;
bool ok = true;

hvd_tensor tensor(void* data, hvd_dl_dtype dtype, int32_t ndim,
                  const int64_t* shape) {
  hvd_tensor t{};
  t.struct_size = sizeof t;
  t.data = data;
  t.device = {HVD_MEM_HOST, 0};
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

hvd_op op_of(hvd_collective collective, const char* name,
             const hvd_tensor* input) {
  hvd_op op{};
  op.struct_size = sizeof op;
  op.collective = collective;
  op.name = name;
  op.tensor_count = 1;
  op.inputs = input;
  return op;
}

// Enqueues, waits, and returns the handle (null on failure, reported).
hvd_handle* run(const hvd_op& op) {
  hvd_handle* h = nullptr;
  if (hvd_enqueue(&op, &h) != HVD_OK) {
    std::fprintf(stderr, "rank %d: %s: %s\n", rank_, op.name, hvd_last_error());
    ok = false;
    return nullptr;
  }
  if (hvd_wait(h, -1) != HVD_OK) {
    std::fprintf(stderr, "rank %d: %s: %s\n", rank_, op.name,
                 hvd_handle_message(h));
    ok = false;
    hvd_release(h);
    return nullptr;
  }
  return h;
}

void check(bool good, const char* what) {
  if (!good) {
    std::fprintf(stderr, "rank %d: wrong %s result\n", rank_, what);
    ok = false;
  }
}

const hvd_dl_dtype kFloat32 = {HVD_DL_FLOAT, 32, 1};
const hvd_dl_dtype kInt32 = {HVD_DL_INT, 32, 1};
const hvd_dl_dtype kUint8 = {HVD_DL_UINT, 8, 1};

void demo_allreduce() {
  float values[4];
  for (int i = 0; i < 4; ++i) values[i] = static_cast<float>(rank_ + 1 + i);
  int64_t shape[] = {4};
  hvd_tensor t = tensor(values, kFloat32, 1, shape);
  hvd_handle* h = run(op_of(HVD_COLL_ALLREDUCE, "demo.allreduce", &t));
  if (!h) return;
  hvd_release(h);
  float base = size_ * (size_ + 1) / 2.0f;
  for (int i = 0; i < 4; ++i) check(values[i] == base + size_ * i, "allreduce");
  if (rank_ == 0) {
    std::printf("allreduce (sum of rank+1+i over %d ranks): [%g, %g, %g, %g]\n",
                size_, values[0], values[1], values[2], values[3]);
  }
}

void demo_allgather() {
  // Rank r contributes r+1 rows holding r.
  std::vector<int32_t> rows(rank_ + 1, rank_);
  int64_t shape[] = {rank_ + 1};
  hvd_tensor t = tensor(rows.data(), kInt32, 1, shape);
  hvd_handle* h = run(op_of(HVD_COLL_ALLGATHER, "demo.allgather", &t));
  if (!h) return;
  hvd_tensor out{};
  hvd_handle_output(h, 0, &out);
  const int32_t* got = static_cast<const int32_t*>(out.data);
  std::string text;
  int64_t at = 0;
  for (int r = 0; r < size_; ++r) {
    for (int i = 0; i <= r; ++i, ++at) {
      check(got[at] == r, "allgather");
      text += (at ? ", " : "") + std::to_string(got[at]);
    }
  }
  check(out.shape[0] == at, "allgather shape");
  if (rank_ == 0)
    std::printf("allgather (rank r gives r+1 rows of r): [%s]\n", text.c_str());
  hvd_release(h);
}

void demo_broadcast() {
  char message[64] = {};
  if (rank_ == 0)
    std::snprintf(message, sizeof message, "hello from rank 0 of %d", size_);
  int64_t shape[] = {sizeof message};
  hvd_tensor t = tensor(message, kUint8, 1, shape);
  hvd_handle* h = run(op_of(HVD_COLL_BROADCAST, "demo.broadcast", &t));
  if (!h) return;
  hvd_release(h);
  char expected[64] = {};
  std::snprintf(expected, sizeof expected, "hello from rank 0 of %d", size_);
  check(std::memcmp(message, expected, sizeof message) == 0, "broadcast");
  std::printf("rank %d received broadcast: \"%s\"\n", rank_, message);
}

void demo_bandwidth(size_t mib, int iterations) {
  size_t count = mib * (1 << 20) / sizeof(float);
  std::vector<float> data(count, 1.0f);
  int64_t shape[] = {static_cast<int64_t>(count)};
  hvd_tensor t = tensor(data.data(), kFloat32, 1, shape);
  hvd_op op = op_of(HVD_COLL_ALLREDUCE, "demo.bandwidth", &t);
  hvd_handle* h = run(op);  // warm-up: buffers and connections
  if (!h) return;
  hvd_release(h);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) {
    h = run(op);
    if (!h) return;
    hvd_release(h);
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  double bytes = static_cast<double>(count * sizeof(float));
  double algbw = bytes * iterations / seconds / 1e9;
  double busbw = algbw * (size_ > 1 ? 2.0 * (size_ - 1) / size_ : 1.0);
  if (rank_ == 0) {
    std::printf(
        "allreduce bandwidth: %zu MiB x %d on %d ranks in %.3f s: "
        "%.3f GB/s algorithm, %.3f GB/s bus\n",
        mib, iterations, size_, seconds, algbw, busbw);
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 16;
  int iterations = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--mib") == 0)
      mib = std::strtoul(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--iterations") == 0)
      iterations = std::atoi(argv[i + 1]);
  }
  if (hvd_init(nullptr) != HVD_OK) {
    std::fprintf(stderr, "horovod-demo: hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  rank_ = hvd_rank();
  size_ = hvd_size();
  if (rank_ == 0) {
    std::printf("horovod-demo: %d rank(s) on %d host(s)\n", size_,
                hvd_cross_size());
  }
  demo_allreduce();
  demo_allgather();
  demo_broadcast();
  demo_bandwidth(mib, iterations);
  hvd_shutdown();
  if (!ok) return 1;
  if (rank_ == 0) std::printf("horovod-demo: all results correct\n");
  return 0;
}
