// `--step NAME` (with --layer runtime): times whole training-like steps
// through the C API instead of one collective: every tensor of the step is
// enqueued (in the order a backward pass produces gradients), then all are
// waited for. Steps:
//   training  200 float32 allreduces from 1 KiB to 4 MiB (sizes growing
//             geometrically), submitted largest-index first
//   names100  100 named allreduces of one float32 each: a step that is all
//             negotiation (run it with and without the response cache)
//   small     256 allreduces of 4 KiB
//   large     4 allreduces of 32 MiB
// The step's results are checked once before timing. With [runtime]
// autotune on and an autotune_log, the warm-up goes on until the log says
// the autotuner settled (at most 3000 steps), so the timed steps run at
// the setting it found.
#pragma once

#include <string>

#include "options.h"
#include "runtime_layer.h"

namespace hvd_bench {

// Runs --warmup untimed and --iters timed steps; rank 0 prints one line (or
// a CSV row). Throws hvd::Error on a failed op or a wrong result.
void bench_step(const Options& options, RuntimeLayer& layer,
                const std::string& config_path);

}  // namespace hvd_bench
