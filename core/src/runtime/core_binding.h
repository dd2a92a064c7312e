// Binding a rank to one core where this host's ranks are at least as many
// as the cores they may run on (runtime.bind_to_core): each would have one
// core at most anyway. Each rank has two threads that hand every
// op back and forth (the caller's and the background thread); left free,
// the scheduler may stack several ranks' threads on one core while another
// idles, and each op then waits for turns there: 4 B allreduce medians at 2
// ranks on 2 cores vary between 6 and 30-140 us from one run to the next.
// One core per rank, by local rank, keeps each rank's pair together and the
// ranks apart, as mpirun --bind-to core does.
#pragma once

#include <sys/types.h>

#include <string>

#include "p2p/core_sharing.h"

namespace hvd::p2p {
class Engine;
}

namespace hvd::runtime {

// The first transport of `engine` that may run threads of its own
// (p2p::Transport::own_threads), or "": a one-core binding, which the threads
// a rank starts later inherit, would make them queue for the core its
// waiting threads hold.
std::string threaded_transport(const p2p::Engine& engine);

// The CPU of `mask` that local rank `local_rank` of `local_size` binds to,
// or -1 where the ranks are fewer than the mask's CPUs (binding would leave
// CPUs idle that the ranks' other threads may use) or the mask has one CPU
// (bound already).
int core_for_rank(const p2p::CpuMask& mask, int local_rank, int local_size);

// Binds the calling thread (and so the threads it starts later) to
// core_for_rank() of its affinity; restore() gives the calling thread its
// former affinity back when it is the thread that was bound.
class CoreBinding {
 public:
  void bind(int local_rank, int local_size);
  void restore();
  int cpu() const { return cpu_; }

 private:
  p2p::CpuMask before_;
  pid_t thread_ = 0;
  int cpu_ = -1;
};

}  // namespace hvd::runtime
