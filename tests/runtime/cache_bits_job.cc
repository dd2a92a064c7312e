// Negotiation by cache bits alone (cycle_cache_bits.cc) through the C
// API, as one job (horovodrun -np N, N >= 2). Steps of the same cached
// allreduces, enqueued in reverse order on odd ranks and with one rank
// late now and then, run without the control plane; steps that mix them
// with a new tensor, and a rank that joins while the others run a cached
// allreduce (it contributes zeros), go through the coordinator; then the
// cached steps run by bits alone again. Every result is checked. At
// shutdown each rank logs how many rounds took each way, which the ctest
// entry matches (few over the control plane, many by bits).
#include <unistd.h>

#include <string>
#include <vector>

#include "allreduce_step.h"
#include "run_job.h"

using namespace mp;

namespace {

const char* const kNames[] = {"bits.a", "bits.b", "bits.c"};
const int64_t kSizes[] = {1, 5, 300};

double value(int rank, size_t i, int step) {
  return static_cast<double>(rank + 1 + static_cast<int>(i % 5) + step % 11);
}

double sum(size_t i, int step, int ranks) {
  double s = 0;
  for (int r = 0; r < ranks; ++r) s += value(r, i, step);
  return s;
}

void check(const Buffer& b, const std::string& what, int step, int ranks) {
  expect_values(b, what + " step " + std::to_string(step),
                [&](size_t i) { return sum(i, step, ranks); });
}

// The cached tensors (and `fresh`, a name never seen before, when given),
// enqueued together.
void step(int s, const std::string& fresh = "") {
  const int count = 3 + (fresh.empty() ? 0 : 1);
  std::vector<Buffer> buffers;
  std::vector<std::string> names;
  for (int k = 0; k < count; ++k) {
    buffers.emplace_back(HVD_FLOAT32,
                         std::vector<int64_t>{k < 3 ? kSizes[k] : 7});
    for (size_t i = 0; i < buffers.back().elements; ++i)
      buffers.back().set(i, value(R, i, s));
    names.push_back(k < 3 ? kNames[k] : fresh);
  }
  // Now and then one rank comes late: the others wait in the exchange.
  if (s % 50 == 7 && R == s % N) usleep(20 * 1000);
  allreduce_step(s, buffers, names, {R % 2 == 1},
                 [&](size_t i) { return sum(i, s, N); });
}

void join_while_others_run_cached(int s) {
  if (R != N - 1) {
    for (int pass = 0; pass < 3; ++pass) {
      Buffer b(HVD_FLOAT32, {kSizes[0]});
      for (size_t i = 0; i < b.elements; ++i) b.set(i, value(R, i, s + pass));
      hvd_op op = make_op(HVD_COLL_ALLREDUCE, kNames[0], &b.desc, 1);
      if (run_op(op) == HVD_OK) {
        check(b, "bits.a with rank " + std::to_string(N - 1) + " joined",
              s + pass, N - 1);
      }
    }
  }
  join_and_wait();
}

}  // namespace

int main(int argc, char** argv) {
  return run_job(argc, argv, "cache bits", [] {
    int s = 0;
    for (; s < 400; ++s) step(s);
    for (int k = 0; k < 5; ++k, ++s) step(s, "fresh." + std::to_string(k));
    join_while_others_run_cached(s);
    s += 3;
    for (int k = 0; k < 100; ++k, ++s) step(s);
  });
}
