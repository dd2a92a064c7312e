// runtime.bind_to_core through the C API, as one job (horovodrun -np 2).
// The job first narrows its affinity to two CPUs, so the ranks fill their
// cores whatever the machine. Bound (argv[1] "on"), hvd_init leaves the
// initialising thread and the background thread on one CPU, a different one
// on each rank, and hvd_shutdown gives the thread its two CPUs back; with
// HOROVOD_BIND_TO_CORE=false ("off"), or over a transport that may run
// threads of its own ("threads"), the affinity stays as it was. argv[2], if
// given, is the configuration file.
#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "run_job.h"

using namespace mp;

namespace {

std::vector<int> cpus_of(pid_t thread) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(thread, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

pid_t find_background_thread() {
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return -1;
  pid_t found = -1;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name == "hvd-background") found = std::atoi(e->d_name);
  }
  closedir(dir);
  return found;
}

// It names itself once it runs, which may be after hvd_init returned.
pid_t background_thread() {
  for (int tries = 0; tries < 2000; ++tries) {
    pid_t found = find_background_thread();
    if (found > 0) return found;
    usleep(1000);
  }
  return -1;
}

std::string text(const std::vector<int>& cpus) {
  std::string out;
  for (int cpu : cpus) out += (out.empty() ? "" : ",") + std::to_string(cpu);
  return "{" + out + "}";
}

// Where each rank and its background thread run, against `mine`, the CPUs
// the rank had before hvd_init.
void check_binding(bool bound, const std::vector<int>& mine) {
  const std::vector<int> caller = cpus_of(0);
  const std::vector<int> background = cpus_of(background_thread());
  expect(background == caller, "the background thread runs on " +
                                   text(background) + ", the caller on " +
                                   text(caller));
  // Each rank's first CPU at its own index: the sum holds them all. The
  // allreduce also keeps every rank's runtime up until each has looked at
  // its background thread (a rank that shut down first would end the
  // others' threads).
  Buffer in(HVD_INT32, {N}), out(HVD_INT32, {N});
  in.set(static_cast<size_t>(R), caller.empty() ? -1 : caller[0]);
  hvd_op op =
      make_op(HVD_COLL_ALLREDUCE, "core_binding.cpus", &in.desc, 1, &out.desc);
  run_op(op);
  if (bound) {
    expect(caller.size() == 1,
           "rank " + std::to_string(R) + " is bound to " + text(caller));
    for (int r = 0; r < N; ++r) {
      for (int s = r + 1; s < N; ++s) {
        expect(out.get(r) != out.get(s),
               "ranks " + std::to_string(r) + " and " + std::to_string(s) +
                   " are bound to the same CPU " + std::to_string(out.get(r)));
      }
    }
  } else {
    expect(caller == mine, "unbound, rank " + std::to_string(R) + " runs on " +
                               text(caller) + ", not " + text(mine));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "on";
  const bool bound = std::strcmp(mode, "on") == 0;
  if (std::strcmp(mode, "off") == 0) setenv("HOROVOD_BIND_TO_CORE", "false", 1);
  std::vector<int> mine = cpus_of(0);
  if (mine.size() < 2) {
    std::printf("core binding: skipped (this process may run on %zu CPU)\n",
                mine.size());
    return 0;
  }
  mine.resize(2);
  cpu_set_t two;
  CPU_ZERO(&two);
  for (int cpu : mine) CPU_SET(cpu, &two);
  expect(sched_setaffinity(0, sizeof two, &two) == 0, "sched_setaffinity");

  JobOptions options;
  options.after_shutdown = [&mine] {
    expect(cpus_of(0) == mine, "after hvd_shutdown rank " + std::to_string(R) +
                                   " runs on " + text(cpus_of(0)) + ", not " +
                                   text(mine));
  };
  return run_once(
      std::string("core binding (") + mode + ")", argc > 2 ? argv[2] : nullptr,
      [&] { check_binding(bound, mine); }, options);
}
