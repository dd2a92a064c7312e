// `--peer gloo`: Gloo's own allreduce (gloo::allreduce, its ring algorithm,
// over its tcp transport) on the same buffers and sizes as ours, in the
// same run, so the table can show the ratio. Gloo's ranks meet through a
// gloo::rendezvous::FileStore in a directory all ranks see: the job's own
// /tmp/hvd-<job id>/ under horovodrun (ranks on one machine), or
// HOROVOD_BENCH_GLOO_STORE. Gloo listens on HOROVOD_GLOO_IFACE when set
// (an interface name), else on the loopback address. Built only where CMake
// finds Gloo; elsewhere make_gloo_peer() fails saying so.
#pragma once

#include <memory>

#include "layer.h"

namespace hvd_bench {

// Throws hvd::Error when this build has no Gloo, the collective or dtype is
// not one Gloo's peer runs, or Gloo's rendezvous fails.
std::unique_ptr<Layer> make_gloo_peer(hvd_collective collective, int rank,
                                      int size);

}  // namespace hvd_bench
