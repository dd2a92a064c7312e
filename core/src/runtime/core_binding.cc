#include "runtime/core_binding.h"

#include <sched.h>
#include <unistd.h>

#include "p2p/engine.h"
#include "p2p/transport.h"

namespace hvd::runtime {
namespace {

cpu_set_t to_set(const p2p::CpuMask& mask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (size_t cpu = 0; cpu < mask.size() * 8 && cpu < CPU_SETSIZE; ++cpu) {
    if ((mask[cpu / 8] >> (cpu % 8)) & 1) CPU_SET(cpu, &set);
  }
  return set;
}

}  // namespace

std::string threaded_transport(const p2p::Engine& engine) {
  for (const auto& t : engine.transports()) {
    if (t->own_threads()) return t->name();
  }
  return "";
}

int core_for_rank(const p2p::CpuMask& mask, int local_rank, int local_size) {
  const int cores = p2p::core_count(mask);
  if (cores < 2 || local_size < cores || local_rank < 0) return -1;
  int nth = local_rank % cores;
  for (size_t cpu = 0; cpu < mask.size() * 8; ++cpu) {
    if (!((mask[cpu / 8] >> (cpu % 8)) & 1)) continue;
    if (nth-- == 0) return static_cast<int>(cpu);
  }
  return -1;
}

void CoreBinding::bind(int local_rank, int local_size) {
  p2p::CpuMask mask = p2p::own_cpu_mask();
  const int cpu = core_for_rank(mask, local_rank, local_size);
  if (cpu < 0) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof one, &one) != 0) return;
  before_ = std::move(mask);
  thread_ = gettid();
  cpu_ = cpu;
}

void CoreBinding::restore() {
  if (cpu_ < 0 || gettid() != thread_) return;
  cpu_set_t set = to_set(before_);
  sched_setaffinity(0, sizeof set, &set);
  cpu_ = -1;
}

}  // namespace hvd::runtime
