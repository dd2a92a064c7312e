// The command line of horovod-bench (see usage_text()).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "horovod/abi.h"

namespace hvd_bench {

enum class LayerKind { kCollective, kRuntime };

struct Options {
  hvd_collective collective = HVD_COLL_ALLREDUCE;
  hvd_dtype dtype = HVD_FLOAT32;
  uint64_t min_bytes = 4;
  uint64_t max_bytes = 256ull << 20;
  uint64_t step_factor = 2;
  int iters = 20;
  int warmup = 5;
  LayerKind layer = LayerKind::kCollective;
  std::string config_path;      // "": the usual search
  std::string transport_intra;  // "": from the configuration
  std::string transport_inter;
  std::string reducer;  // "": the configuration's rules and scores
  std::string peer;     // "", "mpi" or "gloo"
  bool csv = false;
  std::string step;  // --step (step_bench.h): "" times one collective
  // Every installed reducer, each on every size (one row per reducer).
  bool sweep = false;
  std::string plot_path;  // "": no plot
  // How long one collective may take before the bench gives up on it.
  std::chrono::milliseconds op_timeout{60000};
  bool help = false;
};

// Throws std::invalid_argument with a message naming the flag.
Options parse_options(int argc, char** argv);
std::string usage_text();

// "4", "64K", "1M", "256MiB", "2G" (K, M, G are powers of 1024; a trailing
// "B" or "iB" is allowed). false on bad text.
bool parse_size(const std::string& text, uint64_t* out);

const char* collective_name(hvd_collective collective);
const char* layer_name(LayerKind layer);

}  // namespace hvd_bench
