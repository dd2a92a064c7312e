#include "p2p/core_sharing.h"

#include <sched.h>

#include <algorithm>
#include <bit>

namespace hvd::p2p {

CpuMask own_cpu_mask() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) return CpuMask{1};
  CpuMask mask(CPU_SETSIZE / 8, 0);
  int last = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &cpus)) continue;
    mask[cpu / 8] |= static_cast<uint8_t>(1u << (cpu % 8));
    last = cpu;
  }
  mask.resize(last < 0 ? 1 : last / 8 + 1);
  return mask;
}

int core_count(const CpuMask& mask) {
  int cores = 0;
  for (uint8_t byte : mask) cores += std::popcount(byte);
  return cores;
}

bool shares_cores(const std::vector<CpuMask>& masks,
                  const std::vector<int>& host_of, int32_t me) {
  const CpuMask& mine = masks[me];
  CpuMask covered = mine;
  int overlapping = 0;
  for (size_t r = 0; r < masks.size(); ++r) {
    if (host_of[r] != host_of[me]) continue;
    const CpuMask& theirs = masks[r];
    bool overlap = false;
    for (size_t i = 0; i < std::min(mine.size(), theirs.size()); ++i) {
      overlap = overlap || (mine[i] & theirs[i]) != 0;
    }
    if (!overlap) continue;
    ++overlapping;
    if (covered.size() < theirs.size()) covered.resize(theirs.size(), 0);
    for (size_t i = 0; i < theirs.size(); ++i) covered[i] |= theirs[i];
  }
  return overlapping > core_count(covered);
}

}  // namespace hvd::p2p
