// A rank whose data path is busy joins a round another rank began as soon
// as it is called to it, not at its busy deadline, and passes the call on
// (horovodrun -np 3, with the generated configs/busy-wake.toml: cycles of
// 500 ms, no response cache, allreduce by the late reducer,
// late_reducer.c, which starts rank 2's tasks 4 s after they were
// posted). Ranks 0 and 2 allreduce on the process set {0, 2}: both are
// busy for those 4 s, rank 0 waiting for its slow peer. Meanwhile rank 1
// runs allreduces on the process set {1}; each needs a round over the
// control plane, which gathers from every rank, the busy ones included,
// which have nothing new to submit. Rank 1 calls its neighbour in the
// control plane's tree, rank 0, to each of its rounds, which carry its op;
// rank 0 calls rank 2, the other leaf. Were the busy ranks to join at
// their busy deadline (10 cycle times, 5 s, after their last round), rank
// 1's first op alone would take about 5 s.
//
// Then rank 1 idles past its cycle time, so that it sits in an empty round
// of its own, which calls nobody, when its next op comes: the op calls the
// others to that round. Were it to wait with the round until the busy
// ranks come (when the late op ends, about 3 s later), it would take
// seconds instead of milliseconds.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "run_job.h"

using namespace mp;

namespace {

constexpr int kOps = 10;
constexpr auto kLate = std::chrono::seconds(4);  // late_reducer.c's LATE_MS
constexpr auto kBusyDeadline = std::chrono::seconds(5);
// Time for ranks 0 and 2 to negotiate their op and get busy with it, well
// within a cycle time (500 ms) of that round.
constexpr auto kSettle = std::chrono::milliseconds(200);
// Rank 1's idle time before its op in an empty round: a cycle time, then
// 200 ms into the round that begins then. The late op goes on meanwhile.
constexpr auto kIntoEmptyRound = std::chrono::milliseconds(700);
// Far below the wait for the late op's end (about 3 s) that the op in the
// empty round had before it called the others.
constexpr auto kEmptyRoundMost = std::chrono::seconds(1);

long long ms_of(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// This process's CPU time so far (user and system), in ms.
double cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

// This rank's allreduce `name` of 4 floats (each rank's rank + 1) on
// process set `set`, expecting `sum`; returns how long it took.
std::chrono::steady_clock::duration allreduce_on(int32_t set,
                                                 const std::string& name,
                                                 double sum) {
  Buffer b(HVD_FLOAT32, {4});
  for (size_t k = 0; k < b.elements; ++k) b.set(k, R + 1.0);
  hvd_op op = make_op(HVD_COLL_ALLREDUCE, name, &b.desc, 1);
  op.process_set = set;
  const auto start = std::chrono::steady_clock::now();
  if (run_op(op) == HVD_OK) expect(b.get(3) == sum, name + ": sum");
  return std::chrono::steady_clock::now() - start;
}

void summoned_while_busy() {
  expect(N == 3, "needs 3 ranks");
  // Every rank's cycle is timed from here.
  run_op(bare_op(HVD_COLL_BARRIER));
  if (R != 1) {
    const double cpu_before = cpu_ms();
    const auto took = allreduce_on(1, "late", 4.0);
    // Called to rounds and woken by the control plane's frames, a busy
    // rank still sleeps.
    std::printf("rank %d: the late op on {0, 2} in %lld ms, %.1f%% of a core\n",
                R, ms_of(took),
                100.0 * (cpu_ms() - cpu_before) / double(ms_of(took)));
    // Else the reducer did not delay it, and nobody was busy.
    expect(took >= kLate,
           "the late op took only " + std::to_string(ms_of(took)) + " ms");
    return;
  }
  std::this_thread::sleep_for(kSettle);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kOps; ++i) {
    allreduce_on(2, "alone." + std::to_string(i), 2.0);
  }
  const auto took = std::chrono::steady_clock::now() - start;
  std::printf("rank %d: %d ops on {1} beside busy ranks in %lld ms\n", R, kOps,
              ms_of(took));
  expect(took < kBusyDeadline / 2,
         "the busy ranks joined late: " + std::to_string(ms_of(took)) +
             " ms for " + std::to_string(kOps) + " ops");

  std::this_thread::sleep_for(kIntoEmptyRound);
  const auto in_empty = allreduce_on(2, "after.idle", 2.0);
  std::printf("rank %d: an op in an empty round beside busy ranks in %lld ms\n",
              R, ms_of(in_empty));
  expect(in_empty < kEmptyRoundMost,
         "the op in an empty round waited for the busy ranks: " +
             std::to_string(ms_of(in_empty)) + " ms");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return usage(argv[0], "CONFIG.toml");
  JobOptions options;
  options.process_sets = {{0, 2}, {1}};
  return run_once("busy wake", argv[1], summoned_while_busy, options);
}
