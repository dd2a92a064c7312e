// A step submitted op by op, as a training loop's gradients come (one job,
// horovodrun -np N): each rank enqueues kOps allreduces a millisecond
// apart, then waits for them. With a cycle time of 50 ms (batching.toml)
// the background thread leaves ops that keep coming 5 ms apart or less for
// one round, which the waiting thread runs; started on the first op, every
// op would take a round of its own. The ctest entry matches the rounds
// each rank logs at shutdown (the cache is off: every round goes over the
// control plane): about one a step, far fewer than one an op.
#include <string>
#include <vector>

#include "allreduce_step.h"
#include "run_job.h"

using namespace mp;

namespace {

constexpr int kSteps = 10;
constexpr int kOps = 8;

double value(int rank, size_t i) {
  return static_cast<double>(rank + 1 + static_cast<int>(i % 3));
}

void step(int s) {
  std::vector<Buffer> buffers;
  std::vector<std::string> names;
  for (int k = 0; k < kOps; ++k) {
    buffers.emplace_back(HVD_FLOAT32, std::vector<int64_t>{16 + k});
    for (size_t i = 0; i < buffers.back().elements; ++i)
      buffers.back().set(i, value(R, i));
    names.push_back("batching." + std::to_string(k));
  }
  allreduce_step(s, buffers, names, {false, 1000}, [&](size_t i) {
    double want = 0;
    for (int r = 0; r < N; ++r) want += value(r, i);
    return want;
  });
}

}  // namespace

int main(int argc, char** argv) {
  JobOptions options;
  options.barrier = false;  // the ctest entry counts the rounds: no barrier's
  return run_job(
      argc, argv, "batching",
      [] {
        for (int s = 0; s < kSteps; ++s) step(s);
      },
      options);
}
