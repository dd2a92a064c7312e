// Whether the job has a gpu scope: the [transport] gpu transport, open on
// every rank or on none. Each rank says in the mesh's one bootstrap
// allgather what it could open (GpuOffer); every rank then decides from the
// same list, so all agree without another round, and a rank without a
// device, or whose transport failed to load, never leaves the others
// waiting for it. It also needs a device per rank on every host: NCCL
// refuses two ranks on one GPU, so such a job stages device tensors through
// host memory instead.
#pragma once

#include <string>
#include <vector>

namespace hvd::p2p {

// What one rank could open.
struct GpuOffer {
  std::string name;      // the transport it opened; "" when none
  std::string why_not;   // when none: why ("no CUDA device", the load error)
  bool listens = false;  // it has a listener: point-to-point connections
  int devices = 0;       // CUDA devices it sees
};

struct GpuScope {
  bool open = false;
  std::string name;
  // Every rank listens: every pair is connected over it. Otherwise the
  // transport serves its native collectives only (NCCL).
  bool connects = false;
  // When not open: why, naming the ranks ("every rank: no CUDA device").
  std::string why_not;
};

// The decision every rank takes from every rank's offer and host index
// (both in rank order).
GpuScope agree_gpu_scope(const std::vector<GpuOffer>& offers,
                         const std::vector<int>& host_of);

}  // namespace hvd::p2p
