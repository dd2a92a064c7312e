// A rank with nothing to submit joins a round another rank began as soon
// as it is called to it, not at its own next cycle (horovodrun -np 3, with
// configs/idle-wake.toml: cycles of 500 ms, no response cache). Ranks 0
// and 1 run allreduces on the process set {0, 1} one after another; each
// needs a round over the control plane, which gathers from every rank,
// rank 2 included, which submits nothing (no op of its own to wait for
// that would make it round at once) for 4 s before the closing barrier.
// Were rank 2 to join at its own cycle, the ops would take about half a
// second each, until that barrier: 4 s in all.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "run_job.h"

using namespace mp;

namespace {

constexpr int kOps = 20;
constexpr auto kIdle = std::chrono::seconds(4);

// Ranks 0 and 1 allreduce on {0, 1}, timed, while rank 2 idles.
void pair_ops_beside_an_idle_rank() {
  expect(N == 3, "needs 3 ranks");
  if (R >= 2) {
    std::this_thread::sleep_for(kIdle);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kOps; ++i) {
    Buffer b(HVD_FLOAT32, {4});
    for (size_t k = 0; k < b.elements; ++k) b.set(k, R + 1.0);
    const std::string name = "pair." + std::to_string(i);
    hvd_op op = make_op(HVD_COLL_ALLREDUCE, name, &b.desc, 1);
    op.process_set = 1;
    if (run_op(op) == HVD_OK) expect(b.get(3) == 3.0, name + ": sum");
  }
  const auto took = std::chrono::steady_clock::now() - start;
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
  std::printf("rank %d: %d ops on {0, 1} in %lld ms\n", R, kOps,
              static_cast<long long>(ms));
  expect(took < kIdle / 2, "rank 2 joined late: " + std::to_string(ms) +
                               " ms for " + std::to_string(kOps) + " ops");
}

}  // namespace

int main(int argc, char** argv) {
  JobOptions options;
  options.process_sets = {{0, 1}};
  return run_once("idle wake", argc > 1 ? argv[1] : nullptr,
                  pair_ops_beside_an_idle_rank, options);
}
