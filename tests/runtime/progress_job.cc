// Who runs an op's cycle, as one job (horovodrun -np 2). Each rank first
// narrows itself to one CPU, so the waiting thread and the background
// thread share it. argv[1] "caller": over plugins that take calls from any
// thread (their tables opt in, or were built for ABI 1.4), a thread
// waiting in hvd_wait runs the cycle itself, so completion callbacks run
// on it; "background": with a transport that does not (built for 1.3, or
// not opting in) every callback runs on the background thread. argv[2]:
// the configuration file naming the transport.
#include <pthread.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "run_job.h"

using namespace mp;

namespace {

struct Seen {
  std::thread::id thread;
  char name[16] = {};
};

void record(void* user, hvd_status, const char*) {
  auto* seen = static_cast<Seen*>(user);
  seen->thread = std::this_thread::get_id();
  pthread_getname_np(pthread_self(), seen->name, sizeof seen->name);
}

void narrow_to_one_cpu() {
  cpu_set_t mine, one;
  CPU_ZERO(&mine);
  expect(sched_getaffinity(0, sizeof mine, &mine) == 0, "sched_getaffinity");
  const char* rank = std::getenv("HOROVOD_RANK");
  int nth = rank ? std::atoi(rank) % CPU_COUNT(&mine) : 0;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &mine) && nth-- == 0) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  expect(sched_setaffinity(0, sizeof one, &one) == 0, "sched_setaffinity");
}

// Ops whose done callbacks must run on the waiting thread (`caller`) or
// on the background thread.
void count_callbacks(bool caller) {
  constexpr int kOps = 200;
  std::vector<Seen> seen(kOps);
  int here = 0, background = 0;
  for (int i = 0; i < kOps; ++i) {
    Buffer b(HVD_INT32, {5});
    b.set(2, R + i);
    // One name: after the first op, rounds go by cache bits, which a
    // waiting thread runs (a round over the control plane it leaves to the
    // background thread).
    hvd_op op = make_op(HVD_COLL_ALLREDUCE, "progress", &b.desc, 1);
    op.done = record;
    op.user = &seen[i];
    run_op(op);
    expect(b.get(2) == 2 * i + 1, "op " + std::to_string(i) + " summed to " +
                                      std::to_string(b.get(2)));
    if (seen[i].thread == std::this_thread::get_id()) ++here;
    if (std::strcmp(seen[i].name, "hvd-background") == 0) ++background;
  }
  if (caller) {
    // The background thread takes an op only where the scheduler preempted
    // it holding the progress lock just before the enqueue.
    expect(here > 0, "no callback of " + std::to_string(kOps) +
                         " ran on the waiting thread");
  } else {
    expect(background == kOps, std::to_string(kOps - background) +
                                   " callback(s) of " + std::to_string(kOps) +
                                   " ran off the background thread");
  }
  std::printf(
      "rank %d: %d of %d callbacks on the waiting thread, %d on the "
      "background thread\n",
      R, here, kOps, background);
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "caller";
  narrow_to_one_cpu();
  return run_once(
      std::string("progress (") + mode + ")", argc > 2 ? argv[2] : nullptr,
      [mode] { count_callbacks(std::strcmp(mode, "caller") == 0); });
}
