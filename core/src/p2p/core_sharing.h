// Whether this rank shares cores with other ranks of its host, from every
// rank's affinity mask (published in the mesh's bootstrap allgather): take
// the ranks of this host whose masks overlap this rank's (itself included)
// and the cores their masks cover together; more such ranks than cores
// means a waiting rank may hold the core the peer it waits for needs. One
// rank's own mask cannot tell: under mpirun's binding each rank sees one
// core, though no other rank runs there.
#pragma once

#include <cstdint>
#include <vector>

namespace hvd::p2p {

// Bit i of byte i / 8: the process may run on CPU i.
using CpuMask = std::vector<uint8_t>;

// This process's affinity (CPU 0 alone when it cannot be read).
CpuMask own_cpu_mask();

// The CPUs a mask holds.
int core_count(const CpuMask& mask);

// `masks` and `host_of` indexed by world rank.
bool shares_cores(const std::vector<CpuMask>& masks,
                  const std::vector<int>& host_of, int32_t me);

}  // namespace hvd::p2p
